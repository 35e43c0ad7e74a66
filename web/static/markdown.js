// A small, safe Markdown renderer for model text.
//
// Safety rule: every piece of source text is HTML-escaped before any markup
// is added, and the only markup added is a fixed set of tags; link targets
// are kept only when they are http(s) or mailto URLs. The result can be
// assigned to innerHTML.
//
// Supported: paragraphs (single newlines become <br>), ATX headings, fenced
// code (an unclosed fence runs to the end, which suits streaming), block
// quotes, nested bullet / ordered / task lists, GFM tables, rules, inline
// code, **bold**, *italic*, _italic_, ~~strike~~, [links](url) and bare
// http(s) URLs.

const ESC = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** Escapes the five HTML-significant characters. */
export function escapeHtml(s) {
  return String(s).replace(/[&<>"']/g, (c) => ESC[c]);
}

const MAX_DEPTH = 12;

const RE_FENCE = /^ {0,3}(`{3,}|~{3,})[ \t]*([^`\s]*)[^`]*$/;
const RE_HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const RE_HR = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const RE_QUOTE = /^ {0,3}> ?(.*)$/;
const RE_ITEM = /^( *)([-*+]|\d{1,9}[.)])(?:[ \t]+(.*)|$)/;
const RE_TABLE_SEP = /^ *\|? *:?-+:? *(?:\| *:?-+:? *)*\|? *$/;

/** Renders Markdown source to safe HTML. */
export function renderMarkdown(src) {
  const text = String(src ?? "").replace(/\u0000/g, "").replace(/\r\n?/g, "\n").replace(/\t/g, "    ");
  return blocks(text.split("\n"), 0);
}

function isBlank(line) {
  return /^\s*$/.test(line);
}

function startsBlock(line, next) {
  return (
    RE_FENCE.test(line) ||
    RE_HEADING.test(line) ||
    RE_HR.test(line) ||
    RE_QUOTE.test(line) ||
    RE_ITEM.test(line) ||
    (line.includes("|") && next !== undefined && RE_TABLE_SEP.test(next) && next.includes("-"))
  );
}

function blocks(lines, depth) {
  if (depth > MAX_DEPTH) return `<p>${inline(lines.join("\n"))}</p>`;
  const out = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (isBlank(line)) {
      i++;
      continue;
    }
    let m;
    if ((m = RE_FENCE.exec(line))) {
      const fence = m[1];
      const lang = m[2];
      const body = [];
      i++;
      while (i < lines.length) {
        const close = /^ {0,3}(`{3,}|~{3,})[ \t]*$/.exec(lines[i]);
        if (close && close[1][0] === fence[0] && close[1].length >= fence.length) {
          i++;
          break;
        }
        body.push(lines[i]);
        i++;
      }
      const cls = /^[\w+#.-]{1,30}$/.test(lang) ? ` class="language-${escapeHtml(lang)}"` : "";
      out.push(`<pre><code${cls}>${escapeHtml(body.join("\n"))}</code></pre>`);
      continue;
    }
    if ((m = RE_HEADING.exec(line))) {
      const n = m[1].length;
      out.push(`<h${n}>${inline(m[2] || "")}</h${n}>`);
      i++;
      continue;
    }
    if (RE_HR.test(line)) {
      out.push("<hr>");
      i++;
      continue;
    }
    if (RE_QUOTE.test(line)) {
      const body = [];
      while (i < lines.length && (m = RE_QUOTE.exec(lines[i]))) {
        body.push(m[1]);
        i++;
      }
      out.push(`<blockquote>${blocks(body, depth + 1)}</blockquote>`);
      continue;
    }
    if (RE_ITEM.test(line)) {
      i = list(lines, i, depth, out);
      continue;
    }
    if (line.includes("|") && i + 1 < lines.length && RE_TABLE_SEP.test(lines[i + 1]) && lines[i + 1].includes("-")) {
      i = table(lines, i, out);
      continue;
    }
    const para = [line.trim()];
    i++;
    while (i < lines.length && !isBlank(lines[i]) && !startsBlock(lines[i], lines[i + 1])) {
      para.push(lines[i].trim());
      i++;
    }
    out.push(`<p>${inline(para.join("\n"))}</p>`);
  }
  return out.join("");
}

function list(lines, i, depth, out) {
  const first = RE_ITEM.exec(lines[i]);
  const indent = first[1].length;
  const ordered = /\d/.test(first[2]);
  const start = ordered ? parseInt(first[2], 10) : 1;
  const items = [];
  let loose = false;
  while (i < lines.length) {
    const m = RE_ITEM.exec(lines[i]);
    if (!m || m[1].length !== indent || /\d/.test(m[2]) !== ordered) break;
    const contentIndent = indent + m[2].length + 1;
    const body = [m[3] || ""];
    i++;
    let sawBlank = false;
    while (i < lines.length) {
      const l = lines[i];
      if (isBlank(l)) {
        sawBlank = true;
        body.push("");
        i++;
        continue;
      }
      const lead = l.length - l.trimStart().length;
      const sub = RE_ITEM.exec(l);
      if (lead > indent) {
        // Continuation or a nested block: drop the item's indentation.
        body.push(l.slice(Math.min(lead, contentIndent)));
        sawBlank = false;
        i++;
        continue;
      }
      if (sawBlank || sub || startsBlock(l, lines[i + 1])) break;
      body.push(l.trim()); // lazy continuation line
      i++;
    }
    while (body.length && isBlank(body[body.length - 1])) body.pop();
    if (sawBlank && i < lines.length) {
      const m2 = RE_ITEM.exec(lines[i]);
      if (m2 && m2[1].length === indent) loose = true;
    }
    if (body.some(isBlank)) loose = true;
    items.push(body);
  }
  const lis = items.map((body) => {
    let task = "";
    const t = /^\[([ xX])\][ \t]+/.exec(body[0]);
    if (t) {
      task = t[1] === " " ? '<span class="md-task">☐</span> ' : '<span class="md-task md-done">☑</span> ';
      body = [body[0].slice(t[0].length), ...body.slice(1)];
    }
    let html = blocks(body, depth + 1);
    if (!loose) html = html.replace(/^<p>([\s\S]*?)<\/p>/, "$1");
    return `<li>${task}${html}</li>`;
  });
  const tag = ordered ? "ol" : "ul";
  const startAttr = ordered && start !== 1 ? ` start="${start}"` : "";
  out.push(`<${tag}${startAttr}>${lis.join("")}</${tag}>`);
  return i;
}

function splitRow(line) {
  let s = line.trim();
  if (s.startsWith("|")) s = s.slice(1);
  if (s.endsWith("|") && !s.endsWith("\\|")) s = s.slice(0, -1);
  const cells = [];
  let cur = "";
  let inCode = false;
  for (let k = 0; k < s.length; k++) {
    const c = s[k];
    if (c === "\\" && s[k + 1] === "|") {
      cur += "|";
      k++;
      continue;
    }
    if (c === "`") inCode = !inCode;
    if (c === "|" && !inCode) {
      cells.push(cur.trim());
      cur = "";
      continue;
    }
    cur += c;
  }
  cells.push(cur.trim());
  return cells;
}

function table(lines, i, out) {
  const head = splitRow(lines[i]);
  const aligns = splitRow(lines[i + 1]).map((c) =>
    c.startsWith(":") && c.endsWith(":") ? "center" : c.endsWith(":") ? "right" : c.startsWith(":") ? "left" : "",
  );
  i += 2;
  const rows = [];
  while (i < lines.length && !isBlank(lines[i]) && lines[i].includes("|")) {
    rows.push(splitRow(lines[i]));
    i++;
  }
  const cell = (tag, text, k) => {
    const a = aligns[k] ? ` class="md-${aligns[k]}"` : "";
    return `<${tag}${a}>${inline(text ?? "")}</${tag}>`;
  };
  const thead = `<thead><tr>${head.map((c, k) => cell("th", c, k)).join("")}</tr></thead>`;
  const tbody = rows.length ? `<tbody>${rows.map((r) => `<tr>${head.map((_, k) => cell("td", r[k], k)).join("")}</tr>`).join("")}</tbody>` : "";
  out.push(`<div class="md-table"><table>${thead}${tbody}</table></div>`);
  return i;
}

const SAFE_URL = /^(?:https?:\/\/|mailto:)/i;

/** Renders inline Markdown of one block. The text is escaped first; markup
 * is then added to the escaped text. */
export function inline(src) {
  const slots = [];
  const hold = (html) => `\u0000${slots.push(html) - 1}\u0000`;
  let s = escapeHtml(src);

  // Code spans keep their content literally.
  s = s.replace(/(`+)([\s\S]*?[^`])\1(?!`)/g, (_, __, code) => {
    let c = code.replace(/\n/g, " ");
    if (/^ .* $/.test(c) && c.trim() !== "") c = c.slice(1, -1);
    return hold(`<code>${c}</code>`);
  });

  // Backslash escapes of punctuation.
  s = s.replace(/\\([\\`*_{}\[\]()#+\-.!~|>])/g, (_, c) => hold(c));

  // [text](url "title"): only http(s) and mailto targets become links.
  s = s.replace(/\[([^\]\n]{1,500})\]\(\s*([^\s)]{1,2000})(?:\s+&quot;[^\n]*?&quot;)?\s*\)/g, (m, text, url) => {
    if (!SAFE_URL.test(url)) return hold(emphasis(text));
    return hold(`<a href="${url}" target="_blank" rel="noopener noreferrer">${emphasis(text)}</a>`);
  });

  // Bare URLs.
  s = s.replace(/\bhttps?:\/\/(?:(?!&lt;|&gt;|&quot;|&#39;)[^\s\u0000])+/g, (url) => {
    let tail = "";
    const t = /(?:[.,:;!?)\]]|&amp;)+$/.exec(url);
    if (t) {
      tail = t[0];
      url = url.slice(0, -tail.length);
    }
    return hold(`<a href="${url}" target="_blank" rel="noopener noreferrer">${url}</a>`) + tail;
  });

  s = emphasis(s);
  // Line breaks inside a paragraph.
  s = s.replace(/\n/g, "<br>");

  // Put the held pieces back (they may nest).
  for (let guard = 0; guard < 5 && s.includes("\u0000"); guard++) {
    s = s.replace(/\u0000(\d+)\u0000/g, (_, n) => slots[Number(n)] ?? "");
  }
  return s;
}

function emphasis(s) {
  return s
    .replace(/\*\*(?=\S)([\s\S]*?\S)\*\*/g, "<strong>$1</strong>")
    .replace(/(^|[^\w])__(?=\S)([\s\S]*?\S)__(?!\w)/g, "$1<strong>$2</strong>")
    .replace(/~~(?=\S)([\s\S]*?\S)~~/g, "<del>$1</del>")
    .replace(/(^|[^*\w])\*(?=[^\s*])([^*\n]*?[^\s*])?\*(?![*\w])/g, (m, pre, body) => (body === undefined ? m : `${pre}<em>${body}</em>`))
    .replace(/(^|[^\w])_(?=[^\s_])([^_\n]*?[^\s_])?_(?!\w)/g, (m, pre, body) => (body === undefined ? m : `${pre}<em>${body}</em>`));
}
