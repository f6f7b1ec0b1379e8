# Sourced by gateway-bench.sh, thread-costs.sh and paired-builds.sh: the cheapest billed requests
# they compare with GET /healthz, the body each sends, and the wrk script that sends it, so all
# of them measure the same requests; and the chat completion thread-costs.sh can send instead.
BILLED_ENDPOINTS=(transfer-coord extract-phone division-code)
declare -A BILLED_BODY=(
    [transfer-coord]='{"text": "120.026208,30.279212", "srcCoord": "gcj02"}'
    [extract-phone]='{"text": "收件人王小明 电话：138-1234-5678，备用 (0571)8888-6666 转 123"}'
    [division-code]='{"text": "浙江省杭州市余杭区文一西路969号"}'
)

# A non-streaming chat completion for a server whose providers all point at tests/fake_upstream
# (the model gateway-bench.sh routes there): thread-costs.sh --endpoint chat.
CHAT_BODY='{"model":"vendorB-5-nano","messages":[{"role":"user","content":"hello"}]}'

# post_wrk_script FILE BODY KEY: writes a wrk script that POSTs the JSON BODY with KEY.
post_wrk_script() {
    cat >"$1" <<LUA
wrk.method = "POST"
wrk.body = '$2'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer $3"
LUA
}

# billed_wrk_script FILE ENDPOINT KEY: writes the wrk script of ENDPOINT's billed request with KEY.
billed_wrk_script() { post_wrk_script "$1" "${BILLED_BODY[$2]}" "$3"; }
