// Builds the `caplo` command's bundle at install (bin/cliBundle.mjs), so the first command after `npm install`
// (say `npm start`) starts at once. It is built again on first use whenever a source changes, as before; a
// build that fails here only means the first command builds it (or runs the sources through tsx).
import { cliModule } from "../bin/cliBundle.mjs";

const bundle = await cliModule();
console.log(bundle ? "caplo: the CLI's bundle is built" : "caplo: the CLI's bundle could not be built now; the first caplo command builds it or runs the sources");
