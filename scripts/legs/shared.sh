# Sourced by the legs that need files of shared/ (the front ends' files, which no registry
# has): sets $shared to where NBGPUMON_SHARED says, else to the shared/ folder beside the clone
# (for a git worktree, beside the repository it was made from), as CI lays it out.
common=$(git rev-parse --path-format=absolute --git-common-dir 2>/dev/null || echo "$PWD/.git")
shared=${NBGPUMON_SHARED:-$(dirname "$(dirname "$common")")/shared}
