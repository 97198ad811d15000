#!/usr/bin/env bash
# Vendor the graph view's JavaScript library into the package (no CDN at run time).
#
#   scripts/vendor_js.sh            fetch cytoscape@$VERSION with `npm pack`, check its sha512
#                                   integrity against the pinned value and the npm registry's,
#                                   copy dist/cytoscape.min.js and LICENSE into the static folder
#
# The pinned version and integrity are also recorded in docs/graph.md and in
# src/paretorag/server/static/vendor/cytoscape.VERSION (written by this script).
set -euo pipefail

NAME=cytoscape
VERSION=3.35.0
INTEGRITY=sha512-sMvBIXiGMnhkCaWz2R06FwF/27MNlS+Tqvi17foO9UhnUg3XGZccKjxsvEqQFAQYMSSZmN5SxYzUYlQ0DOJJ3g==

here=$(cd "$(dirname "$0")/.." && pwd)
dest="$here/src/paretorag/server/static/vendor"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

registry=$(npm view "$NAME@$VERSION" dist.integrity)
if [ "$registry" != "$INTEGRITY" ]; then
  echo "the npm registry gives $NAME@$VERSION the integrity $registry, not the pinned $INTEGRITY" >&2
  exit 1
fi
(cd "$work" && npm pack "$NAME@$VERSION" --silent >/dev/null)
tarball="$work/$NAME-$VERSION.tgz"
actual="sha512-$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)"
if [ "$actual" != "$INTEGRITY" ]; then
  echo "$tarball has the integrity $actual, not the pinned $INTEGRITY" >&2
  exit 1
fi
tar -xzf "$tarball" -C "$work" package/dist/cytoscape.min.js package/LICENSE
mkdir -p "$dest"
cp "$work/package/dist/cytoscape.min.js" "$dest/cytoscape.min.js"
cp "$work/package/LICENSE" "$dest/cytoscape.LICENSE"
file_sha=$(sha256sum "$dest/cytoscape.min.js" | cut -d' ' -f1)
cat > "$dest/cytoscape.VERSION" <<NOTE
$NAME $VERSION (MIT, see cytoscape.LICENSE)
from: npm pack $NAME@$VERSION (https://registry.npmjs.org/$NAME/-/$NAME-$VERSION.tgz)
tarball integrity (npm registry dist.integrity): $INTEGRITY
file: package/dist/cytoscape.min.js, sha256 $file_sha
reproduce: scripts/vendor_js.sh
NOTE
echo "vendored $NAME $VERSION into $dest"
