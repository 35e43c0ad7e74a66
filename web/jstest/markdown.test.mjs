// Unit tests of the console's markdown renderer: node --test web/jstest/
import { test } from "node:test";
import assert from "node:assert/strict";
import { renderMarkdown as md, inline, escapeHtml } from "../static/markdown.js";

test("escapes HTML everywhere", () => {
  const evil = `<script>alert(1)</script> <img src=x onerror=alert(1)> "q" 'a' &amp;`;
  const out = md(evil);
  assert.ok(!out.includes("<script"), out);
  assert.ok(!out.includes("<img"), out);
  assert.equal(out, "<p>&lt;script&gt;alert(1)&lt;/script&gt; &lt;img src=x onerror=alert(1)&gt; &quot;q&quot; &#39;a&#39; &amp;amp;</p>");
  assert.equal(md("```\n<b>x</b>\n```"), "<pre><code>&lt;b&gt;x&lt;/b&gt;</code></pre>");
  assert.equal(md("`<b>`"), "<p><code>&lt;b&gt;</code></p>");
  assert.equal(md("# <i>h</i>"), "<h1>&lt;i&gt;h&lt;/i&gt;</h1>");
  assert.equal(escapeHtml(`<>&"'`), "&lt;&gt;&amp;&quot;&#39;");
});

test("links: only http(s) and mailto, attributes cannot be broken out of", () => {
  assert.equal(
    inline("[site](https://example.com/a?b=1&c=2)"),
    '<a href="https://example.com/a?b=1&amp;c=2" target="_blank" rel="noopener noreferrer">site</a>',
  );
  assert.equal(inline("[x](javascript:alert(1))"), "x)");
  assert.equal(inline("[x](JavaScript:alert`1`)"), "x");
  assert.ok(!inline('[x](https://e.com/"onmouseover="alert(1))').includes('"onmouseover'));
  assert.equal(inline("[x](data:text/html,hi)"), "x");
  assert.equal(
    inline("see https://example.com/x."),
    'see <a href="https://example.com/x" target="_blank" rel="noopener noreferrer">https://example.com/x</a>.',
  );
  assert.ok(!inline("https://e.com/<script>").includes("<script"));
});

test("inline emphasis and code", () => {
  assert.equal(inline("**b** and *i* and _j_ and ~~s~~"), "<strong>b</strong> and <em>i</em> and <em>j</em> and <del>s</del>");
  assert.equal(inline("snake_case_name and 2 * 3 * 4"), "snake_case_name and 2 * 3 * 4");
  assert.equal(inline("`**not bold**`"), "<code>**not bold**</code>");
  assert.equal(inline("\\*literal\\*"), "*literal*");
  assert.equal(inline("a\nb"), "a<br>b");
});

test("blocks: headings, lists, quotes, rules, code", () => {
  assert.equal(md("## Title\n\ntext"), "<h2>Title</h2><p>text</p>");
  assert.equal(md("- a\n- b\n  - c\n- d"), "<ul><li>a</li><li>b<ul><li>c</li></ul></li><li>d</li></ul>");
  assert.equal(md("1. one\n2. two"), "<ol><li>one</li><li>two</li></ol>");
  assert.equal(md("3. three\n4. four"), '<ol start="3"><li>three</li><li>four</li></ol>');
  assert.equal(md("- [ ] todo\n- [x] done"), '<ul><li><span class="md-task">☐</span> todo</li><li><span class="md-task md-done">☑</span> done</li></ul>');
  assert.equal(md("> quoted\n> more"), "<blockquote><p>quoted<br>more</p></blockquote>");
  assert.equal(md("a\n\n---\n\nb"), "<p>a</p><hr><p>b</p>");
  assert.equal(md("```go\nfunc main() {}\n```\nafter"), '<pre><code class="language-go">func main() {}</code></pre><p>after</p>');
  assert.equal(md("text\n- item"), "<p>text</p><ul><li>item</li></ul>");
});

test("an unclosed fence (mid-stream) renders as code to the end", () => {
  assert.equal(md("Here:\n```js\nconst a = 1;\nconst b"), '<p>Here:</p><pre><code class="language-js">const a = 1;\nconst b</code></pre>');
});

test("tables", () => {
  const out = md("| a | b |\n|:--|--:|\n| 1 | `x|y` |\n| <2> | **3** |");
  assert.equal(
    out,
    '<div class="md-table"><table><thead><tr><th class="md-left">a</th><th class="md-right">b</th></tr></thead>' +
      '<tbody><tr><td class="md-left">1</td><td class="md-right"><code>x|y</code></td></tr>' +
      '<tr><td class="md-left">&lt;2&gt;</td><td class="md-right"><strong>3</strong></td></tr></tbody></table></div>',
  );
});

// Bounded: each output is at most a fixed multiple of its input. The
// time is no assertion (a loaded machine made a 2 s bound fail at 4 s
// where an idle one takes 30 ms): 60 s only catches a renderer that
// backtracks exponentially, which would take hours on these inputs.
test("pathological input stays bounded", () => {
  const inputs = [
    ">".repeat(5000) + " x",
    "*".repeat(20000),
    "[".repeat(5000) + "](".repeat(5000),
    "- ".repeat(3000) + "x",
    "`".repeat(10000),
  ];
  const t0 = Date.now();
  for (const input of inputs) {
    const out = md(input);
    assert.ok(out.length <= 8 * input.length + 1000, `${input.slice(0, 8)}…: ${out.length} bytes out of ${input.length}`);
  }
  assert.ok(Date.now() - t0 < 60000, `took ${Date.now() - t0} ms: exponential backtracking?`);
});
