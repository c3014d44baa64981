// The team console's entry: renders the app into the page the gateway serves at /console.
import { render } from "preact";
import { App } from "./App.tsx";
import "../../widget/src/app/style.css";
import "./console.css";

render(<App />, document.getElementById("caplo")!);
