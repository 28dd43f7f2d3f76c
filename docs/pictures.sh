#!/usr/bin/env bash
# Makes the README's three pictures from the real program, into docs/src/images/:
#   leaderboard.png  `evals compare` on the bundled example (the README's first command),
#                    its colours rendered as a terminal shows them;
#   check.png        the README walk-through's failing `evals check`, the same way
#                    (tests/cli/walkthrough.rs keeps its output with EVALS_SCREENSHOTS);
#   comment.png      that check's Markdown, rendered as GitHub shows a pull request comment
#                    (marked, with GitHub's own stylesheet from the github-markdown-css
#                    package).
# Each page is a static HTML file screenshotted by headless Chromium. Needs python3, node
# and npm (marked and github-markdown-css are installed once under target/tools/) and
# chromium. Run it again after a change to what these commands print.
set -euo pipefail
cd "$(dirname "$0")/.."
out=docs/src/images
work=$(mktemp -d /tmp/evals-pictures.XXXXXX)
trap 'rm -rf "$work"; git clean -fdqX -- fixtures/' EXIT

tools=target/tools/pictures-1
if [ ! -f "$tools/node_modules/marked/package.json" ] || [ ! -f "$tools/node_modules/github-markdown-css/package.json" ]; then
  npm install --silent --no-audit --no-fund --prefix "$tools" marked@18.2.1 github-markdown-css@5.9.0
fi

cargo build --quiet --bin evals
# The terminal the pictures show: 140 columns (long lines wrap there, as a terminal wraps them).
cols=140
export PICTURE_COLUMNS=$cols
# The first command's screen (it exits 0: four contenders pass the suite's thresholds).
COLUMNS=$cols target/debug/evals compare --color always > "$work/leaderboard.ansi" 2>&1 || true
EVALS_SCREENSHOTS="$work" EVALS_SCREENSHOT_COLUMNS=$cols cargo test --quiet --test cli walkthrough > /dev/null

# Terminal colours (SGR) to HTML, a dark terminal's palette.
python3 - "$work" <<'EOF'
import html, os, re, sys
work = sys.argv[1]
cols = int(os.environ["PICTURE_COLUMNS"])
PALETTE = ["#1e1e1e", "#f14c4c", "#23d18b", "#f5f543", "#3b8eea", "#d670d6", "#29b8db", "#e5e5e5"]
BRIGHT = ["#666666", "#f14c4c", "#23d18b", "#f5f543", "#3b8eea", "#d670d6", "#29b8db", "#ffffff"]
def to_html(text):
    out, style = [], {}
    for part in re.split(r"(\x1b\[[0-9;]*m)", text):
        m = re.fullmatch(r"\x1b\[([0-9;]*)m", part)
        if not m:
            if part:
                css = ";".join(f"{k}:{v}" for k, v in style.items())
                out.append(f'<span style="{css}">{html.escape(part)}</span>' if css else html.escape(part))
            continue
        codes = [int(c) if c else 0 for c in m.group(1).split(";")]
        i = 0
        while i < len(codes):
            c = codes[i]
            if c == 0: style = {}
            elif c == 1: style["font-weight"] = "bold"
            elif c == 2: style["opacity"] = "0.7"
            elif c == 3: style["font-style"] = "italic"
            elif c == 4: style["text-decoration"] = "underline"
            elif c == 22: style.pop("font-weight", None); style.pop("opacity", None)
            elif c == 23: style.pop("font-style", None)
            elif c == 24: style.pop("text-decoration", None)
            elif 30 <= c <= 37: style["color"] = PALETTE[c - 30]
            elif 90 <= c <= 97: style["color"] = BRIGHT[c - 90]
            elif c == 39: style.pop("color", None)
            elif c in (38, 48) and i + 2 < len(codes) and codes[i + 1] == 5:
                n = codes[i + 2]
                colour = (PALETTE + BRIGHT)[n] if n < 16 else "#cccccc"
                style["color" if c == 38 else "background"] = colour
                i += 2
            elif c in (38, 48) and i + 4 < len(codes) and codes[i + 1] == 2:
                r, g, b = codes[i + 2:i + 5]
                style["color" if c == 38 else "background"] = f"rgb({r},{g},{b})"
                i += 4
            i += 1
    return "".join(out)
for name, title in (("leaderboard", "evals compare"), ("check", "evals check --baseline main")):
    text = open(f"{work}/{name}.ansi", encoding="utf-8").read().rstrip("\n")
    # The glossary under a table is left out of the pictures: it explains the columns, and
    # the pictures are of the tables and the verdict.
    text = re.sub(r"(?m)^(\x1b\[[0-9;]*m)*glossary:(\x1b\[[0-9;]*m)*\n(  .*\n)*", "", text)
    page = f"""<!doctype html><meta charset="utf-8"><style>
body {{ margin: 0; background: #2d2d2d; }}
.bar {{ height: 28px; background: #3c3c3c; color: #aaa; font: 13px sans-serif; line-height: 28px; padding-left: 12px; }}
pre {{ margin: 0; padding: 12px 16px; background: #1e1e1e; color: #e5e5e5; font: 14px/1.2 'DejaVu Sans Mono', monospace;
       width: {cols}ch; white-space: pre-wrap; word-break: break-all; }}
</style><div class="bar">$ {html.escape(title)}</div><pre>{to_html(text)}</pre>
<script>document.documentElement.dataset.height = document.body.scrollHeight;
document.documentElement.dataset.width = document.querySelector('pre').offsetWidth;</script>"""
    open(f"{work}/{name}.html", "w", encoding="utf-8").write(page)
EOF

# The check's Markdown as GitHub shows a pull request comment.
node - "$work" "$PWD/$tools/node_modules" <<'EOF'
const fs = require('fs');
const [work, modules] = process.argv.slice(2);
import(`${modules}/marked/lib/marked.esm.js`).then(({ marked }) => {
  const css = fs.readFileSync(`${modules}/github-markdown-css/github-markdown-light.css`, 'utf8');
  const body = marked.parse(fs.readFileSync(`${work}/comment.md`, 'utf8'), { gfm: true });
  fs.writeFileSync(`${work}/comment.html`, `<!doctype html><meta charset="utf-8"><style>${css}
body { margin: 0; padding: 16px; background: #fff; font-family: sans-serif; }
.comment { border: 1px solid #d0d7de; border-radius: 6px; max-width: 1012px; }
.head { background: #f6f8fa; border-bottom: 1px solid #d0d7de; padding: 8px 16px; font: 14px sans-serif; color: #59636e; border-radius: 6px 6px 0 0; }
.head b { color: #1f2328; }
.markdown-body { padding: 16px; font-size: 14px; }
</style><div class="comment"><div class="head"><b>github-actions</b> bot commented</div>
<article class="markdown-body">${body}</article></div>
<script>document.documentElement.dataset.height = document.body.scrollHeight;
document.documentElement.dataset.width = 1060;</script>`);
});
EOF

chrome() {
  local profile
  profile=$(mktemp -d "$work/profile.XXXXXX")
  chromium --headless --no-sandbox --disable-gpu --disable-background-networking --no-first-run \
    --disable-extensions --hide-scrollbars --user-data-dir="$profile" "$@" 2> /dev/null
}
# Each page says its own size (a script writes it into the DOM); then the screenshot.
for name in leaderboard check comment; do
  dom=$(chrome --window-size=1060,800 --dump-dom "file://$work/$name.html")
  height=$(sed -n 's/.*data-height="\([0-9]*\)".*/\1/p' <<< "$dom" | head -1)
  width=$(sed -n 's/.*data-width="\([0-9]*\)".*/\1/p' <<< "$dom" | head -1)
  chrome --window-size="${width:-1030},${height:-1200}" --screenshot="$out/$name.png" "file://$work/$name.html" > /dev/null
done
ls -l "$out"/{leaderboard,check,comment}.png
