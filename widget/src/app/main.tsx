// The app's entry: reads the loader's parameters, finds the gateway's WebSocket on its own host, and
// renders the widget into the iframe's page.
import { render } from "preact";
import { App } from "./components/App.tsx";
import { timeOf } from "./components/Log.tsx";
import { WS_PATH } from "./frames.ts";
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
render(<App params={params} url={url} storage={storage} parent={window.parent === window ? null : window.parent} />, root);
// What the click would otherwise wait for, done now, each in a task of its own (in a frame that shares the
// host page's renderer, as on Android, no one task holds the page up for long): lay the app out (in a frame
// the loader made ahead of a click it is then only shown), read localStorage once (the first read loads
// this origin's storage from the browser, a synchronous round trip the hello would wait for), and format a
// time once (the first loads the locale's data, which the greeting's time would wait for).
const later = (work: () => void) => {
  const idle = (window as { requestIdleCallback?: (cb: () => void, options: { timeout: number }) => number }).requestIdleCallback;
  if (idle) idle(work, { timeout: 1000 });
  else setTimeout(work, 1);
};
later(() => root.getBoundingClientRect());
later(() => storage.resumeToken());
later(() => timeOf(new Date().toISOString(), params.locale));
