#!/usr/bin/env bash
# Builds video extraction's libFuzzer target (fuzz_video_extract.cpp) with clang, outside the
# main build, and runs it. Needs clang and libclang-rt-14-dev (libFuzzer, sanitizers) besides
# qt6-base-dev.
#   tests/social/fuzz_video_extract.sh [seconds (60)] [work dir (build/fuzz-video-extract)]
# Exits non-zero when the fuzzer finds a crash, a sanitizer report or a broken property; the
# input that did it is left in the work dir (crash-*).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
seconds=${1:-60}
. "$root/tests/common/fuzz-build.sh"
fuzz_workdir "${2:-$root/build/fuzz-video-extract}"
fuzz_build fuzz_video_extract "Qt6Core" -I"$root/server/social/engine" \
    "$here/fuzz_video_extract.cpp" "$root/server/social/engine/VideoExtract.cpp"

# Seeds: one URL per form detect() knows, look-alikes, and answer shapes for normalize().
fuzz_seeds '%s' 'https://www.youtube.com/watch?v=dQw4w9WgXcQ' 'https://youtu.be/dQw4w9WgXcQ' \
    'https://www.tiktok.com/@a/video/7350810998023949599' 'https://vm.tiktok.com/ZMeAbCdEf/' \
    'https://www.douyin.com/jingxuan?modal_id=7448118827402972455' 'https://v.douyin.com/e3x2/' \
    'https://x.com/i/web/status/1808168603721650364' 'https://t.co/AbCd' \
    'https://www.bilibili.com/video/BV1M1421t7hT?p=2' 'https://b23.tv/xYz' \
    'https://www.instagram.com/someone/reel/DRhvwVLAHAG/' 'https://www.instagram.com/share/x/' \
    'https://v.m.chenzhongtech.com/fw/photo/3xhpk3xcf6e4iac' 'https://v.kuaishou.com/GKTpYm' \
    'https://www.xiaohongshu.com/user/profile/5c31698d0000000007018a31/697c0eee000000000a03c308' \
    'https://weibo.com/tv/show/1034:5232127105761312' 'https://m.weibo.cn/status/z0JH2lOMb' \
    'https://go.example.com/x' 'https://u:p@www.youtube.com:8443/watch?v=dQw4w9WgXcQ' \
    'HTTPS://WWW.YOUTUBE.COM./watch?v=dQw4w9WgXcQ' 'https://youtube.com.evil.example/watch' \
    'https://ｗｗｗ.ｙｏｕｔｕｂｅ.ｃｏｍ/watch?v=dQw4w9WgXcQ' 'https://xn--80ak6aa92e.com/' \
    '{"aweme_detail":{"video":{"bit_rate":[{"play_addr":{"url_list":["https://a/b"],"width":1}}]}}}' \
    '{"code":0,"data":{"cid":1,"pages":[{"cid":2}],"dash":{"video":[{"baseUrl":"https://a"}]}}}' \
    '{"media":{"video":[{"variants":[{"url":"https://v/vid/1x2/a.mp4"}]}]}}' \
    '{"items":[{"data":{"page_info":{"media_info":{"stream_url":"//a/b.mp4"}}}}]}'

./fuzz_video_extract -max_total_time="$seconds" -max_len=600 -timeout=10 -print_final_stats=1 corpus
