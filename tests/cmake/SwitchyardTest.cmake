# switchyard_test(): the one way a test is registered with CTest. Included by
# tests/CMakeLists.txt and by tests/fake_upstream/CMakeLists.txt (which also builds standalone).
#
#   switchyard_test(<name>
#       [SOURCES <file>...]        build an executable from these sources (a Qt Test suite
#                                  unless PROGRAM) and run it as the test
#       [TARGET <target>]          the executable's target name (default: <name>)
#       [PROGRAM]                  the executable is a plain program judged by its exit code,
#                                  not a Qt Test suite: no Qt Test or switchyard_testsupport
#                                  link, no default ENVIRONMENT or TIMEOUT
#       [LIBS <lib>...]            target_link_libraries(PRIVATE)
#       [INCLUDES <dir>...]        target_include_directories(PRIVATE)
#       [DEFINITIONS <def>...]     target_compile_definitions(PRIVATE), e.g. PATH="$<TARGET_FILE:x>"
#       [DEPENDS <target>...]      targets built before the executable (programs it runs)
#       [ARGS <arg>...]            arguments to the executable
#       [COMMAND <cmd> <arg>...]   run this instead (a script-driven test); generator
#                                  expressions work; may be combined with SOURCES/TARGET, which
#                                  then only builds the executable
#       [ENVIRONMENT <VAR=value>...]  added to the test's environment
#       [TIMEOUT <seconds>]        default 300 for a Qt Test suite, else none (CTest's default)
#       [SKIP_RETURN_CODE <code>]  exit code that CTest reports as skipped (77 by convention)
#       [LABELS <label>...])       for ctest -L / -LE
#
# A Qt Test suite (SOURCES without PROGRAM) links Qt6::Test, and switchyard_testsupport
# (tests/common) when the build has it, and runs with QT_QPA_PLATFORM=offscreen, so widget
# tests need no display. Examples:
#   switchyard_test(tst_money SOURCES models/tst_money.cpp)
#   switchyard_test(tst_cli SOURCES app/tst_cli.cpp LIBS switchyard_serverfixture
#       DEPENDS switchyard-server DEFINITIONS SERVER_BINARY="$<TARGET_FILE:switchyard-server>")
#   switchyard_test(tst_division_eval TARGET eval_division PROGRAM
#       SOURCES address/eval_division.cpp LIBS switchyard_address
#       ARGS --floor 0.98 SKIP_RETURN_CODE 77 TIMEOUT 300)
#   switchyard_test(e2e_sdk COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/run.sh
#       ENVIRONMENT "SWITCHYARD_SERVER=$<TARGET_FILE:switchyard-server>" TIMEOUT 600 LABELS e2e)
include_guard(GLOBAL)

function(switchyard_test name)
    cmake_parse_arguments(PARSE_ARGV 1 T "PROGRAM" "TARGET;TIMEOUT;SKIP_RETURN_CODE"
        "SOURCES;LIBS;INCLUDES;DEFINITIONS;DEPENDS;ARGS;COMMAND;ENVIRONMENT;LABELS")
    if(T_UNPARSED_ARGUMENTS)
        message(FATAL_ERROR "switchyard_test(${name}): unknown arguments ${T_UNPARSED_ARGUMENTS}")
    endif()
    if(NOT T_TARGET)
        set(T_TARGET ${name})
    endif()
    if(NOT T_SOURCES AND NOT T_COMMAND)
        message(FATAL_ERROR "switchyard_test(${name}): give SOURCES (an executable) or COMMAND")
    endif()
    if(NOT T_SOURCES AND (T_LIBS OR T_INCLUDES OR T_DEFINITIONS OR T_DEPENDS OR T_PROGRAM))
        message(FATAL_ERROR "switchyard_test(${name}): LIBS, INCLUDES, DEFINITIONS, DEPENDS and "
                            "PROGRAM apply to an executable built from SOURCES")
    endif()
    if(T_COMMAND AND T_ARGS)
        message(FATAL_ERROR "switchyard_test(${name}): put the arguments in COMMAND, not ARGS")
    endif()

    set(qt_test FALSE)
    if(T_SOURCES)
        add_executable(${T_TARGET} ${T_SOURCES})
        if(NOT T_PROGRAM)
            set(qt_test TRUE)
            if(TARGET switchyard_testsupport)
                target_link_libraries(${T_TARGET} PRIVATE switchyard_testsupport)
            endif()
            target_link_libraries(${T_TARGET} PRIVATE Qt6::Test)
        endif()
        if(T_LIBS)
            target_link_libraries(${T_TARGET} PRIVATE ${T_LIBS})
        endif()
        if(T_INCLUDES)
            target_include_directories(${T_TARGET} PRIVATE ${T_INCLUDES})
        endif()
        if(T_DEFINITIONS)
            target_compile_definitions(${T_TARGET} PRIVATE ${T_DEFINITIONS})
        endif()
        if(T_DEPENDS)
            add_dependencies(${T_TARGET} ${T_DEPENDS})
        endif()
    endif()

    if(T_COMMAND)
        add_test(NAME ${name} COMMAND ${T_COMMAND})
    else()
        add_test(NAME ${name} COMMAND ${T_TARGET} ${T_ARGS})
    endif()

    set(env ${T_ENVIRONMENT})
    set(timeout ${T_TIMEOUT})
    if(qt_test)
        list(PREPEND env "QT_QPA_PLATFORM=offscreen")
        if(NOT timeout)
            set(timeout 300)
        endif()
    endif()
    if(env)
        set_tests_properties(${name} PROPERTIES ENVIRONMENT "${env}")
    endif()
    if(timeout)
        set_tests_properties(${name} PROPERTIES TIMEOUT ${timeout})
    endif()
    if(NOT "${T_SKIP_RETURN_CODE}" STREQUAL "")
        set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE ${T_SKIP_RETURN_CODE})
    endif()
    if(T_LABELS)
        set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS}")
    endif()
endfunction()
