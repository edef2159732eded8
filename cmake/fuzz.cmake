# fuzz.cmake - libFuzzer targets of tests/fuzz (-DIBTRS_FUZZ=ON, clang only).
#
# Included by the top CMakeLists.txt after the library targets exist. The
# library sources are compiled a second time, instrumented for coverage
# and checked by ASan and UBSan, into ibtrs_fuzz_lib; the regular targets
# of the same build stay as they are. Every tests/fuzz/fuzz_*.c is one
# target; fuzz_gen writes the seed corpus (tests/fuzz/corpus/<target>/).
# Each target is a CTest test labelled "fuzz" that runs a fixed number of
# inputs from its corpus, so that the suite stays quick; scripts/fuzz.sh
# runs them for longer.
if(NOT IBTRS_FUZZ)
	return()
endif()
if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
	message(FATAL_ERROR "IBTRS_FUZZ needs clang (libFuzzer), not "
		"${CMAKE_C_COMPILER_ID}: configure with -DCMAKE_C_COMPILER=clang")
endif()

include(CheckCSourceCompiles)
set(CMAKE_REQUIRED_FLAGS "-fsanitize=fuzzer,address,undefined")
check_c_source_compiles("
#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{ (void)d; (void)n; return 0; }" IBTRS_HAVE_LIBFUZZER)
unset(CMAKE_REQUIRED_FLAGS)
if(NOT IBTRS_HAVE_LIBFUZZER)
	message(FATAL_ERROR "IBTRS_FUZZ: clang cannot link -fsanitize=fuzzer "
		"(install libclang-rt-dev, libclang-rt-14-dev on Debian 12)")
endif()

set(IBTRS_FUZZ_RUNS 20000 CACHE STRING "Inputs per fuzz target in ctest")
set(IBTRS_FUZZ_SAN -fsanitize=address,undefined -fno-sanitize-recover=all
	-fno-omit-frame-pointer)

# The library, instrumented. Only the wire format of ibnbd is fuzzed: its
# client and server are not part of this archive.
add_library(ibtrs_fuzz_lib STATIC ${IBTRS_LIB_SOURCES}
	${PROJECT_SOURCE_DIR}/src/ibnbd/proto.c)
target_compile_options(ibtrs_fuzz_lib PRIVATE -fsanitize=fuzzer-no-link
	${IBTRS_FUZZ_SAN} -UNDEBUG)
target_compile_definitions(ibtrs_fuzz_lib PRIVATE _GNU_SOURCE IBTRS_BUILD
	${IBTRS_LIB_DEFINITIONS})
target_include_directories(ibtrs_fuzz_lib PUBLIC include src src/base src/core
	src/xprt PRIVATE ${IBTRS_LIB_INCLUDES})
target_link_libraries(ibtrs_fuzz_lib PUBLIC Threads::Threads
	${IBTRS_LIB_LIBRARIES})

set(IBTRS_FUZZ_DIR ${PROJECT_SOURCE_DIR}/tests/fuzz)
file(GLOB IBTRS_FUZZ_SOURCES CONFIGURE_DEPENDS ${IBTRS_FUZZ_DIR}/fuzz_*.c)
set(IBTRS_FUZZ_TARGETS "")
foreach(src ${IBTRS_FUZZ_SOURCES})
	get_filename_component(name ${src} NAME_WE)
	string(REGEX REPLACE "^fuzz_" "" name ${name})
	if(name STREQUAL "gen")
		continue()
	endif()
	add_executable(fuzz_${name} ${src})
	target_compile_options(fuzz_${name} PRIVATE -fsanitize=fuzzer
		${IBTRS_FUZZ_SAN} -UNDEBUG)
	target_link_options(fuzz_${name} PRIVATE -fsanitize=fuzzer
		${IBTRS_FUZZ_SAN})
	target_compile_definitions(fuzz_${name} PRIVATE _GNU_SOURCE IBTRS_BUILD)
	target_include_directories(fuzz_${name} PRIVATE ${IBTRS_FUZZ_DIR}
		include src src/base src/core src/xprt)
	list(APPEND IBTRS_FUZZ_TARGETS ${name})
	# The dictionary of the target, else of its family.
	set(dict ${IBTRS_FUZZ_DIR}/dict/${name}.dict)
	if(NOT EXISTS ${dict} AND name MATCHES "^ibnbd_")
		set(dict ${IBTRS_FUZZ_DIR}/dict/ibnbd.dict)
	elseif(NOT EXISTS ${dict})
		set(dict ${IBTRS_FUZZ_DIR}/dict/ibtrs.dict)
	endif()
	# New inputs go to the build directory, never into the repository.
	set(out ${CMAKE_CURRENT_BINARY_DIR}/fuzz-out/${name})
	file(MAKE_DIRECTORY ${out})
	# The stateful targets run fewer: several hundred inputs a second,
	# and the client's falls to some 30 a second once its corpus holds
	# inputs that wait out a timeout (a bounded wait each).
	set(runs ${IBTRS_FUZZ_RUNS})
	set(timeout 120)
	if(name STREQUAL "srv")
		math(EXPR runs "${IBTRS_FUZZ_RUNS} / 4")
		set(timeout 300)
	elseif(name STREQUAL "clt")
		math(EXPR runs "${IBTRS_FUZZ_RUNS} / 20")
		set(timeout 300)
	endif()
	# A finding fails the test: libFuzzer's own exit code for it (77)
	# is the one CTest takes for a skip.
	add_test(NAME fuzz/${name} COMMAND fuzz_${name} -runs=${runs} -seed=1
		-error_exitcode=1 -timeout_exitcode=1 -max_len=4096 -timeout=30 -artifact_prefix=${out}/
		-dict=${dict} ${out} ${IBTRS_FUZZ_DIR}/corpus/${name})
	set_tests_properties(fuzz/${name} PROPERTIES LABELS fuzz
		TIMEOUT ${timeout} SKIP_RETURN_CODE 77)
endforeach()
# fuzz_ctl includes the few library files it drives; the others link the
# instrumented archive (fuzz_tcp_frames includes tcp.c, whose symbols then
# keep the archive's copy out).
foreach(name ${IBTRS_FUZZ_TARGETS})
	if(name STREQUAL "ctl")
		target_link_libraries(fuzz_${name} PRIVATE Threads::Threads)
	else()
		target_link_libraries(fuzz_${name} PRIVATE ibtrs_fuzz_lib)
	endif()
endforeach()

# The seed corpus generator: valid messages from the real encoders.
add_executable(fuzz_gen ${IBTRS_FUZZ_DIR}/fuzz_gen.c ${IBTRS_FUZZ_DIR}/gen_tcp.c
	${IBTRS_FUZZ_DIR}/gen_text.c ${IBTRS_FUZZ_DIR}/gen_srv.c
	${IBTRS_FUZZ_DIR}/gen_clt.c)
target_compile_definitions(fuzz_gen PRIVATE _GNU_SOURCE IBTRS_BUILD)
target_include_directories(fuzz_gen PRIVATE ${IBTRS_FUZZ_DIR})
target_link_options(fuzz_gen PRIVATE ${IBTRS_FUZZ_SAN})
target_link_libraries(fuzz_gen PRIVATE ibtrs_fuzz_lib)

# All of them: cmake --build DIR --target fuzz (scripts/fuzz.sh).
set(deps fuzz_gen)
foreach(name ${IBTRS_FUZZ_TARGETS})
	list(APPEND deps fuzz_${name})
endforeach()
add_custom_target(fuzz DEPENDS ${deps})
