#!/usr/bin/env python3
"""Write the grading command's sample submissions and the example grade sheet anew.

    python3 scripts/samples.py            # rewrite what is stale, say what was written
    python3 scripts/samples.py --check    # only say whether they are current (exit 1 if not)

Run it after changing the paths chapter's prose (the samples are its student version) or the
grader's sheet; commit what it writes. See ``booktools.samples``.
"""

from booktools.samples import main

if __name__ == "__main__":
    raise SystemExit(main())
