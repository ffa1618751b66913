"""The README's Python example (kept outside python/agrag's parent folder so that running it imports
the installed package, not the source tree): themes for a question from the run at AGRAG_ROOT (default
./.agrag), as the contract's own example prints them."""

import asyncio
import sys

import agrag
from agrag.evidence.themes import search_themes

QUESTION = sys.argv[1] if len(sys.argv) > 1 else "Do statins reduce mortality after myocardial infarction?"


async def main() -> None:
    store = agrag.open_store()
    embedder = store.embedder()
    scope = agrag.Scope.all()
    themes = await search_themes(store, embedder, QUESTION, scope=scope, limit=3, support_limit=2)
    print(themes.status.value, themes.truncated, themes.index_state)
    for theme in themes.themes:
        print(f"{theme.score:.4f}  {theme.theme_id}  {theme.entities}")
        for passage in theme.passages:
            print("   ", passage.evidence_id)
    for failure in themes.failures:
        print("failed:", failure.leg, failure.message)


if __name__ == "__main__":
    asyncio.run(main())
