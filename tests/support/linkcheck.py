#!/usr/bin/env python3
"""Offline link check of a built mdBook: every relative href and src in every page names a
file of the build, and every #fragment an id in that file. Links with a scheme (https:,
mailto:) are not followed: the check never touches the network.

    python3 tests/support/linkcheck.py target/book

Prints each broken link as `page: link (why)` and exits 1 when there is any; 0 otherwise.
(`tests/cli/book.rs` checks the Markdown sources the same way on every `cargo test`; this
checks what mdBook made of them: its .md → .html rewriting and the copied images.)
"""

import os
import sys
from html.parser import HTMLParser
from urllib.parse import unquote, urlsplit


class Page(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids = set()
        self.links = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if value is None:
                continue
            if name in ("id", "name"):
                self.ids.add(value)
            elif (name == "href" and tag in ("a", "link")) or (name == "src" and tag in ("img", "script")):
                self.links.append(value)


def parse(path):
    page = Page()
    with open(path, encoding="utf-8") as f:
        page.feed(f.read())
    return page


def main(root):
    if not os.path.isdir(root):
        print(f"error: {root} is no folder: build the book first (mdbook build docs)", file=sys.stderr)
        return 2
    pages = {}
    for folder, _, files in os.walk(root):
        for name in files:
            if name.endswith(".html"):
                path = os.path.normpath(os.path.join(folder, name))
                pages[path] = parse(path)
    broken = []
    checked = 0
    for path, page in sorted(pages.items()):
        for link in page.links:
            parts = urlsplit(link)
            if parts.scheme or link.startswith("//"):
                continue
            checked += 1
            target = path
            if parts.path:
                target = os.path.normpath(os.path.join(os.path.dirname(path), unquote(parts.path)))
                if os.path.isdir(target):
                    target = os.path.join(target, "index.html")
                if not os.path.exists(target):
                    broken.append(f"{os.path.relpath(path, root)}: {link} (no file {os.path.relpath(target, root)})")
                    continue
            if parts.fragment and target.endswith(".html"):
                ids = pages[target].ids if target in pages else parse(target).ids
                if unquote(parts.fragment) not in ids:
                    broken.append(f"{os.path.relpath(path, root)}: {link} (no id '{parts.fragment}' there)")
    for line in broken:
        print(line)
    if broken:
        print(f"error: {len(broken)} broken links in {root} (of {checked} checked): fix the Markdown in docs/src/", file=sys.stderr)
        return 1
    print(f"{root}: {checked} links in {len(pages)} pages, none broken", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "target/book"))
