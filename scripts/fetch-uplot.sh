#!/bin/sh
# fetch-uplot.sh fetches the pinned uPlot release from npm into
# analyzers/report/uplot (uPlot.iife.min.js, uPlot.min.css, LICENSE, and
# VERSION and SHA256SUMS), which
# report.html embeds (go:embed). The package tarball's sha512 is verified
# against the pin before anything is extracted. Run it from the module root
# to update uPlot: change VERSION and SHA512 (npm view uplot@X
# dist.integrity), run, review and commit the files.
set -eu
VERSION=1.6.32
SHA512=KIMVnG68zvu5XXUbC4LQEPnhwOxBuLyW1AHtpm6IKTXImkbLgkMy+jabjLgSLMasNuGGzQm/ep3tOkyTxpiQIw==
dest=analyzers/report/uplot
[ -d "$dest" ] || { echo "fetch-uplot: run from the module root ($dest missing)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "uplot@$VERSION" >/dev/null)
tgz="$tmp/uplot-$VERSION.tgz"
got=$(openssl dgst -sha512 -binary "$tgz" | base64 | tr -d '\n')
if [ "$got" != "$SHA512" ]; then
	echo "fetch-uplot: uplot-$VERSION.tgz sha512-$got, want sha512-$SHA512" >&2
	exit 1
fi
tar -xzf "$tgz" -C "$tmp"
cp "$tmp/package/dist/uPlot.iife.min.js" "$tmp/package/dist/uPlot.min.css" "$tmp/package/LICENSE" "$dest/"
echo "$VERSION" >"$dest/VERSION"
# TestUPlotEmbedded (analyzers/report) checks the embedded files against these.
(cd "$dest" && sha256sum uPlot.iife.min.js uPlot.min.css LICENSE >SHA256SUMS)
echo "fetch-uplot: uPlot $VERSION (sha512-$SHA512) in $dest"
