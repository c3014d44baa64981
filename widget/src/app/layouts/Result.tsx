// A tool result shown with the reply: its title and the component of its layout.
import { useWidget } from "../context.ts";
import { clampText } from "../format.ts";
import { Cards } from "./Cards.tsx";
import { Choices } from "./Choices.tsx";
import type { Layout, ResultMessage } from "./common.tsx";
import { Comparison } from "./Comparison.tsx";
import { Detail } from "./Detail.tsx";
import { List } from "./List.tsx";
import { MapPlot } from "./MapPlot.tsx";
import { PageLink } from "./PageLink.tsx";
import { Table } from "./Table.tsx";
import { Timeline } from "./Timeline.tsx";

const LAYOUTS: Record<Layout, (props: { result: ResultMessage }) => preact.JSX.Element | null> = {
  list: List,
  table: Table,
  cards: Cards,
  choices: Choices,
  detail: Detail,
  comparison: Comparison,
  timeline: Timeline,
  map: MapPlot,
  page: PageLink,
};

export function Result({ result }: { result: ResultMessage }) {
  const { t } = useWidget();
  const Layout = LAYOUTS[result.layout];
  if (!Layout) return null;
  const titleId = `${result.id}-title`;
  return (
    <section class={`card result layout-${result.layout}`} aria-labelledby={titleId}>
      <h3 id={titleId}>{clampText(result.title, 200)}</h3>
      {/* A lookup that found nothing says so, rather than a title over an empty box. */}
      {result.items.length === 0 ? <p class="muted">{t.empty}</p> : <Layout result={result} />}
    </section>
  );
}
