// A strict XML 1.0 well-formedness check for the reports' tests (no dependency): one root element, tags
// nested and closed in order, attributes quoted and unique, and no raw `<` or `&` outside an entity or
// character reference in text or attribute values. Returns the first problem, or undefined.
const NAME = "[A-Za-z_:][A-Za-z0-9_:.-]*";
const REFERENCE = /&(?:lt|gt|amp|quot|apos|#[0-9]+|#x[0-9A-Fa-f]+);/g;

function badText(text: string): string | undefined {
  const stripped = text.replace(REFERENCE, "");
  if (stripped.includes("&")) return "a raw & in text";
  if (stripped.includes("<")) return "a raw < in text";
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x08\x0B\x0C\x0E-\x1F]/.test(text)) return "a control character XML 1.0 cannot hold";
  return undefined;
}

export function xmlProblem(xml: string): string | undefined {
  let rest = xml.replace(/^<\?xml[^?]*\?>\s*/, "");
  const open: string[] = [];
  let roots = 0;
  const tag = new RegExp(`^<(/?)(${NAME})((?:\\s+${NAME}\\s*=\\s*(?:"[^"]*"|'[^']*'))*)\\s*(/?)>`);
  while (rest.length > 0) {
    const lt = rest.indexOf("<");
    const text = lt === -1 ? rest : rest.slice(0, lt);
    const textProblem = badText(text);
    if (textProblem) return textProblem;
    if (open.length === 0 && text.trim() !== "") return "text outside the root element";
    if (lt === -1) break;
    rest = rest.slice(lt);
    const match = tag.exec(rest);
    if (!match) return `a malformed tag at ${JSON.stringify(rest.slice(0, 40))}`;
    const [whole, closing, name, attributes, selfClosing] = match;
    const seen = new Set<string>();
    for (const attribute of attributes!.matchAll(new RegExp(`(${NAME})\\s*=\\s*("[^"]*"|'[^']*')`, "g"))) {
      if (seen.has(attribute[1]!)) return `attribute ${attribute[1]} twice`;
      seen.add(attribute[1]!);
      const valueProblem = badText(attribute[2]!.slice(1, -1));
      if (valueProblem) return `${valueProblem} (attribute ${attribute[1]})`;
    }
    if (closing) {
      if (open.pop() !== name) return `</${name}> closes the wrong element`;
    } else if (!selfClosing) {
      if (open.length === 0) roots += 1;
      open.push(name!);
    } else if (open.length === 0) roots += 1;
    rest = rest.slice(whole.length);
  }
  if (open.length > 0) return `<${open.at(-1)}> is never closed`;
  return roots === 1 ? undefined : `${roots} root elements`;
}
