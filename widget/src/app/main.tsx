// The app's entry: reads the loader's parameters, finds the gateway's WebSocket on its own host, and
// renders the widget into the iframe's page.
import { render } from "preact";
import { App } from "./components/App.tsx";
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
render(
  <App params={params} url={url} storage={new WidgetStorage(params.agent)} parent={window.parent === window ? null : window.parent} />,
  root,
);
// Lay the app out now: in a frame the loader made ahead of a click this happens while it is hidden, so
// the click only has to paint it.
root.getBoundingClientRect();
