#!/usr/bin/env bash
# Regenerates the README's screenshots from the golden recording (LinkedListLeak). Needs a
# display or xvfb-run.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build -p memcity-viewer
bin="${CARGO_TARGET_DIR:-target}/debug/memcity"
shot() {
  xvfb-run -a -s "-screen 0 1280x720x24" "$bin" replay proto/tests/data/golden-v1.mcrec "$@"
}
# docs/city.png: the Person allocation site selected, so its references show (green: what it
# keeps alive, purple: what keeps it alive), with the labels and legend a user sees.
shot --select '(default package)/LinkedListLeak$Person/LinkedListLeak.main(LinkedListLeak.java:33)' \
  --hud --screenshot docs/city.png
# docs/viewer.png: the whole window, the Person type selected (its details panel lists
# allocation sites and the references to follow), the settings panel open.
shot --select '(default package)/LinkedListLeak$Person' --settings --hud --screenshot docs/viewer.png
# docs/icicle.png: the same heap as an icicle, LinkedList$Node selected.
shot --view icicle --select 'java.util/java.util.LinkedList$Node' --hud --screenshot docs/icicle.png
# docs/sunburst.png: drilled down into java.util, the whole heap beside it.
shot --view sunburst --drill 'java.util' --hud --screenshot docs/sunburst.png
# docs/timeline.png: the first, third and last snapshots side by side, heap-scaled.
shot --view timeline --pick 1,3 --hud --screenshot docs/timeline.png
