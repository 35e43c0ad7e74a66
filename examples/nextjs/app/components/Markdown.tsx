import type { ReactNode } from "react";

// Markdown for the agent's answers, as React elements: headings, lists,
// fenced code (an unclosed fence runs to the end, as while it streams),
// paragraphs, `code`, **bold** and *italic*. The text is never parsed as
// HTML: React escapes every string, so a model's "<script>" stays text.
// A real app may prefer a full renderer (react-markdown); this keeps the
// example free of more dependencies.

/** Inline spans: `code`, **bold**, *italic* / _italic_. */
function spans(text: string, key: string): ReactNode[] {
  const out: ReactNode[] = [];
  const re = /`([^`]+)`|\*\*([^*]+)\*\*|\*([^*\s][^*]*)\*|_([^_\s][^_]*)_/g;
  let last = 0;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text)) !== null) {
    if (m.index > last) out.push(text.slice(last, m.index));
    const k = `${key}.${m.index}`;
    if (m[1] !== undefined) out.push(<code key={k}>{m[1]}</code>);
    else if (m[2] !== undefined) out.push(<strong key={k}>{m[2]}</strong>);
    else out.push(<em key={k}>{m[3] ?? m[4]}</em>);
    last = re.lastIndex;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

export function Markdown({ text }: { text: string }) {
  const blocks: ReactNode[] = [];
  const lines = text.split("\n");
  type List = { ordered: boolean; items: string[] };
  let para: string[] = [];
  let list = null as List | null; // (a cast: flush() resets it, which TypeScript's narrowing cannot see)
  const flush = () => {
    const k = `b${blocks.length}`;
    if (para.length) blocks.push(<p key={k}>{spans(para.join(" "), k)}</p>);
    else if (list) {
      const items = list.items.map((it, i) => <li key={i}>{spans(it, `${k}.${i}`)}</li>);
      blocks.push(list.ordered ? <ol key={k}>{items}</ol> : <ul key={k}>{items}</ul>);
    }
    para = [];
    list = null;
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? "";
    const fence = /^\s*(```|~~~)\s*(\S*)/.exec(line);
    if (fence) {
      if (para.length || list) flush();
      const code: string[] = [];
      for (i++; i < lines.length && !(lines[i] ?? "").trim().startsWith(fence[1] ?? "```"); i++) code.push(lines[i] ?? "");
      blocks.push(
        <pre key={`b${blocks.length}`} data-lang={fence[2] || undefined}>
          <code>{code.join("\n")}</code>
        </pre>,
      );
      continue;
    }
    const heading = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    const item = /^\s*([-*+]|\d+[.)])\s+(.*)$/.exec(line);
    if (heading) {
      if (para.length || list) flush();
      const k = `b${blocks.length}`;
      const level = Math.min((heading[1] ?? "#").length + 2, 6); // below the page's own headings
      const H = `h${level}` as "h3" | "h4" | "h5" | "h6";
      blocks.push(<H key={k}>{spans(heading[2] ?? "", k)}</H>);
    } else if (item) {
      const ordered = /\d/.test(item[1] ?? "");
      if (para.length || (list && list.ordered !== ordered)) flush();
      if (!list) list = { ordered, items: [] };
      list.items.push(item[2] ?? "");
    } else if (line.trim() === "") {
      if (para.length || list) flush();
    } else {
      if (list) flush();
      para.push(line.trim());
    }
  }
  if (para.length || list) flush();
  return <>{blocks}</>;
}
