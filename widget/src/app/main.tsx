// The app's entry: reads the loader's parameters, finds the gateway's WebSocket on its own host, and
// renders the widget into the iframe's page.
import { render } from "preact";
import { App } from "./components/App.tsx";
import { WS_PATH } from "./frames.ts";
import { whenIdle } from "./idle.ts";
import { readParams } from "./params.ts";
import { WidgetStorage } from "./storage.ts";
import "./style.css";

const ancestor = (location as Location & { ancestorOrigins?: DOMStringList }).ancestorOrigins?.[0];
const params = readParams(location.search, ancestor, navigator.language);
// ?agent= lets the gateway check the Origin against this agent's allowed origins before the upgrade.
const url = `${location.protocol === "https:" ? "wss:" : "ws:"}//${location.host}${WS_PATH}?agent=${encodeURIComponent(params.agent)}`;
document.documentElement.lang = params.locale;
if (params.theme) document.documentElement.dataset.theme = params.theme;
const root = document.getElementById("caplo")!;
const storage = new WidgetStorage(params.agent);
/** The next task (scheduler.yield where the browser has it: it resumes before other queued work). */
const nextTask = (): Promise<void> => {
  const scheduler = (globalThis as { scheduler?: { yield?: () => Promise<void> } }).scheduler;
  return scheduler?.yield ? scheduler.yield() : new Promise((resolve) => setTimeout(resolve, 0));
};
// The start-up in short tasks (in a frame that shares the host page's renderer, as on Android, no one task
// holds the page up for long): the module's evaluation; the first localStorage read (it loads this origin's
// storage from the browser, a synchronous round trip the hello would otherwise wait for); the first render;
// and, when idle, the browser lays the app out (in a frame the loader made ahead of a click it is then only
// shown). Messages' first time format is made later still, once the chat is open (App).
void (async () => {
  await nextTask();
  storage.resumeToken();
  await nextTask();
  render(<App params={params} url={url} storage={storage} parent={window.parent === window ? null : window.parent} />, root);
  whenIdle(() => root.getBoundingClientRect());
})();
