"""Every page of the user guide is reachable from docs/index.md."""

from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_every_docs_page_is_linked_from_the_index():
    index = (DOCS / "index.md").read_text()
    unlinked = [
        p.name
        for p in sorted(DOCS.glob("*.md"))
        if p.name != "index.md" and f"({p.name})" not in index
    ]
    assert unlinked == [], f"docs/index.md does not link {unlinked}"
