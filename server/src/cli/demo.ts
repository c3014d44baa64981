// `caplo demo` (what `npm start` runs): until the demo shop lands, it says so and prints the CLI's help.
import { usage } from "./main.ts";

export const help = "caplo demo\n\nStarts the demo shop with the widget, the example tools and an embedded SQLite store.";

export async function run(_args: string[]): Promise<number> {
  console.log("The Caplo demo shop is not built yet in this version. Here is what the CLI can do:\n");
  console.log(usage());
  return 0;
}
