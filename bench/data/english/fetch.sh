#!/usr/bin/env bash
# Fetch the English evaluation documents (see SOURCES.md) into OUTPUT_DIR.
# Debian only: apt-get download + dpkg -x, nothing else from outside.
# Usage: bash bench/data/english/fetch.sh OUTPUT_DIR
set -euo pipefail

if [ "$#" -ne 1 ]; then
    echo "usage: $0 OUTPUT_DIR" >&2
    exit 2
fi
mkdir -p "$1"
out="$(cd "$1" && pwd)"

# package | path inside the package | NAME in OUTPUT_DIR (".gz" paths are gunzipped)
DOCS="
git-doc|usr/share/doc/git-doc/git-bisect-lk2009.txt|git-bisect-lk2009.txt
r-doc-pdf|usr/share/R/doc/manual/R-FAQ.pdf|R-FAQ.pdf
debian-history|usr/share/doc/debian-history/docs/project-history.en.pdf|project-history.en.pdf
debian-policy|usr/share/doc/debian-policy/fhs/fhs-3.0.txt.gz|fhs-3.0.txt
vim-runtime|usr/share/vim/vim90/doc/usr_10.txt|usr_10.txt
texlive-latex-recommended-doc|usr/share/doc/texlive-doc/latex/booktabs/booktabs.pdf|booktabs.pdf
maint-guide|usr/share/doc/maint-guide/maint-guide.en.txt.gz|maint-guide.en.txt
"

# sha256 of the documents the queries were written against (Debian 12 "bookworm")
SUMS="
14b86c6f149645920ab93a357408c4c8c6b4be9c376c97b42f38d1dc290348bb  git-bisect-lk2009.txt
de8768520d4fb90dad64c28483ffb92dca7dd9d8dc8556905b35c2e62a939255  R-FAQ.pdf
d3d263affc69ec9c994fe1d06b3cf7dddb78f84e24849d87a4aefe3a4ed15e77  project-history.en.pdf
ec52379984c85fdeddea6fabd5a84c8c358016e4d7c616995c2b147451d127b3  fhs-3.0.txt
56c945acb2b10b836c3f74eca1ea23b602af1c8a872026e4a510851dd2ebe654  usr_10.txt
7052d0760750c97a9fa3ae6e00942768a809f84a05466d36dc9e38f906d98dfe  booktabs.pdf
5926f4e5972c38bc18f94a7ac545e9794678d82d9b4d0ea93c843e1c94f1b9e1  maint-guide.en.txt
"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

packages="$(echo "$DOCS" | awk -F'|' 'NF == 3 {print $1}' | sort -u)"
# shellcheck disable=SC2086
if ! apt-cache show $packages >/dev/null 2>&1; then
    apt-get update >/dev/null
fi
for pkg in $packages; do
    # root downloads into a private temp dir: skip the _apt sandbox that cannot write there
    (cd "$work" && apt-get -o APT::Sandbox::User=root download "$pkg" >/dev/null)
    dpkg -x "$work/${pkg}"_*.deb "$work/$pkg"
done

echo "$DOCS" | while IFS='|' read -r pkg path name; do
    [ -n "$pkg" ] || continue
    src="$work/$pkg/$path"
    if [ ! -f "$src" ]; then
        echo "missing $path in $pkg" >&2
        exit 1
    fi
    case "$path" in
        *.gz) gzip -dc "$src" >"$out/$name" ;;
        *) cp -L "$src" "$out/$name" ;;
    esac
    echo "$name <- $pkg:/$path"
done

if ! (cd "$out" && echo "$SUMS" | sed '/^$/d' | sha256sum --check --quiet); then
    echo "WARNING: some documents differ from the versions the queries were written for;" \
         "re-check the answer offsets in queries.jsonl" >&2
fi
