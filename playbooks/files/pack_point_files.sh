#!/bin/sh
# Pack what a point's components wrote on this host into one tar, laid out as the
# point's directory wants it, so that teardown fetches one file per host:
#
#   logs/<host>/<name>                     every *.log and *.out (not LevelDB's NNNNNN.log)
#   raw/<host>/<name>                      every *.csv
#   raw/<host>/blocks/<component>/<channel>/blockfile_NNNNNN   the ledgers' block files (KEEP_BLOCKS=true)
#
# Files are found anywhere under WORK_DIR and named by their base name (two files
# of one name: the one found last stays). Hard links where the file system allows,
# so that staging copies nothing.
#
#   pack_point_files.sh WORK_DIR HOST KEEP_BLOCKS OUT_TAR
set -eu
work=$1 host=$2 keep_blocks=$3 out=$4
stage="$out.d"
rm -rf "$stage" "$out"
mkdir -p "$(dirname "$out")"
mkdir -p "$stage/logs/$host" "$stage/raw/$host"

place() {  # place FILE DEST_DIR
  mkdir -p "$2"
  ln -f "$1" "$2/" 2>/dev/null || cp -f "$1" "$2/"
}

if [ -d "$work" ]; then
  find "$work" -type f \( -name '*.log' -o -name '*.out' \) ! -name '[0-9][0-9][0-9][0-9][0-9][0-9].log' |
    while IFS= read -r f; do place "$f" "$stage/logs/$host"; done
  find "$work" -type f -name '*.csv' | while IFS= read -r f; do place "$f" "$stage/raw/$host"; done
  if [ "$keep_blocks" = true ]; then
    find "$work" -type f -name 'blockfile_*' | while IFS= read -r f; do
      rel=${f#"$work"/}
      place "$f" "$stage/raw/$host/blocks/${rel%%/*}/$(basename "$(dirname "$f")")"
    done
  fi
fi
tar -C "$stage" -cf "$out" .
rm -rf "$stage"
