# The core's suites (server/*.cpp, server/http/). Included from tests/CMakeLists.txt.
switchyard_test(tst_pipeline SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_pipeline.cpp LIBS switchyard_serverfixture)
switchyard_test(tst_credit_gate SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_credit_gate.cpp LIBS switchyard_serverfixture)
switchyard_test(tst_router SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_router.cpp LIBS switchyard_server)
switchyard_test(tst_compact_json SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_compact_json.cpp LIBS switchyard_core)
# The config toolkit's readers (server/ConfigFields.h) and ServerSettings read through them.
switchyard_test(tst_config_fields SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_config_fields.cpp LIBS switchyard_core)
switchyard_test(tst_job_queue SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_job_queue.cpp LIBS switchyard_server)
switchyard_test(tst_epoll_dispatcher SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_epoll_dispatcher.cpp LIBS switchyard_core)
switchyard_test(tst_http SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_http.cpp LIBS switchyard_serverfixture)
# GET /metrics: public on loopback, a metrics:read token elsewhere (binds the wildcard address).
switchyard_test(tst_metrics_access SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_metrics_access.cpp
    LIBS switchyard_serverfixture)
include(${CMAKE_CURRENT_LIST_DIR}/multipart.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/http_head.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/http_connection.cmake)
# Hostile raw-socket clients against the switchyard-server program (its memory read from /proc).
switchyard_test(tst_hostile_clients SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_hostile_clients.cpp
    LIBS switchyard_serverfixture switchyard_fakeupstream
    DEPENDS switchyard-server DEFINITIONS SERVER_BINARY="$<TARGET_FILE:switchyard-server>")
# Several switchyard-server processes on one database: shared limits and holds, changes seen
# everywhere, a SIGKILL, the database stopped and started under load.
switchyard_test(tst_instances SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_instances.cpp LIBS switchyard_serverfixture
    DEPENDS switchyard-server
    DEFINITIONS SERVER_BINARY="$<TARGET_FILE:switchyard-server>" SOURCE_DIR="${PROJECT_SOURCE_DIR}")
# Per-key rules through the control API and on billed requests (budgets, expiry, addresses,
# models).
switchyard_test(tst_key_governance SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_key_governance.cpp
    LIBS switchyard_serverfixture)
# CSV exports and usage summaries: the API, the command line, quoting and exact numbers.
switchyard_test(tst_usage_export SOURCES ${CMAKE_CURRENT_LIST_DIR}/tst_usage_export.cpp
    LIBS switchyard_serverfixture switchyard_app)
