# Sourced by the legs that need files of shared/ (the front ends' files, which no registry
# has): sets $shared to where NBGPUMON_SHARED says, else to the shared/ folder beside the clone
# (for a git worktree, beside the repository it was made from), as CI lays it out.
common=$(git rev-parse --path-format=absolute --git-common-dir 2>/dev/null || echo "$PWD/.git")
shared=${NBGPUMON_SHARED:-$(dirname "$(dirname "$common")")/shared}

# Whether a missing file fails the leg: where CI says so (NBGPUMON_REQUIRE_SHARED=1, set by
# .ci/run) or where the user named the folder (a wrong path should not pass as a skip). A leg
# may set it too, for a file of its own named by a variable (COLAB_TARBALL).
case ${NBGPUMON_REQUIRE_SHARED:-} in
    "" | 0) shared_required=${NBGPUMON_SHARED:+1} ;;
    *) shared_required=1 ;;
esac

# need_shared LEG FILE...: where a FILE is missing, the leg ends here: skipped, with one line
# saying why and how to run it (a fresh clone has no shared/ beside it), or failed where
# required.
need_shared() {
    local leg=$1 file
    shift
    for file in "$@"; do
        [ -f "$file" ] && continue
        if [ -n "$shared_required" ]; then
            echo "$leg: $file is missing (shared/ beside the clone, or set NBGPUMON_SHARED to it)" >&2
            exit 1
        fi
        echo "$leg: skipped: $file is not here (it comes with shared/, from no registry);" \
            "to run it: NBGPUMON_SHARED=/path/to/shared scripts/test"
        [ -z "${NBGPUMON_SKIPPED_LEGS:-}" ] || echo "$leg" >>"$NBGPUMON_SKIPPED_LEGS"  # its summary
        exit 0
    done
}
