# Sourced by gateway-bench.sh and thread-costs.sh: the cheapest billed requests they compare
# with GET /healthz, and the body each sends, so both measure the same requests.
BILLED_ENDPOINTS=(transfer-coord extract-phone division-code)
declare -A BILLED_BODY=(
    [transfer-coord]='{"text": "120.026208,30.279212", "srcCoord": "gcj02"}'
    [extract-phone]='{"text": "收件人王小明 电话：138-1234-5678，备用 (0571)8888-6666 转 123"}'
    [division-code]='{"text": "浙江省杭州市余杭区文一西路969号"}'
)
