# The social-data engine's catalog and envelope scanner (server/social/engine): SocialCatalog
# over the real upstream catalog (shared data) and hostile shapes, EnvelopeScanner split at
# every point and checked against QJsonDocument.
switchyard_test(tst_envelope_scanner SOURCES social/tst_envelope_scanner.cpp
    LIBS switchyard_social
    DEFINITIONS SOCIAL_OPENAPI="${PROJECT_SOURCE_DIR}/../shared/data/social/openapi-upstream.json")
switchyard_test(tst_social_catalog SOURCES social/tst_social_catalog.cpp
    LIBS switchyard_social
    DEFINITIONS SOCIAL_OPENAPI="${PROJECT_SOURCE_DIR}/../shared/data/social/openapi-upstream.json")
# The scanner's and the catalog's libFuzzer target, built with clang outside this build, run for
# 20 s.
switchyard_test(fuzz_social_engine
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/social/fuzz_social_engine.sh 20
            ${CMAKE_CURRENT_BINARY_DIR}/fuzz_social_engine
    TIMEOUT 600 LABELS fuzz)
