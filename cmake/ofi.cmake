# ofi.cmake - the optional libfabric backend ("ofi").
#
# Included by the top CMakeLists.txt before the library targets exist. When
# pkg-config finds libfabric, src/xprt/ofi/ofi.c joins the library and
# IBTRS_HAVE_OFI registers the backend; without it the library builds
# without the backend and the ofi tests skip (exit 77).
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
	pkg_check_modules(LIBFABRIC QUIET libfabric)
endif()

if(LIBFABRIC_FOUND)
	# Not linked: src/xprt/ofi/ofi_dl.c opens libfabric when the backend
	# is first used, so that a process on another backend never loads it
	# (nor the provider libraries it links).
	list(APPEND IBTRS_LIB_SOURCES
		${CMAKE_CURRENT_SOURCE_DIR}/src/xprt/ofi/ofi.c
		${CMAKE_CURRENT_SOURCE_DIR}/src/xprt/ofi/ofi_dl.c)
	list(APPEND IBTRS_LIB_DEFINITIONS IBTRS_HAVE_OFI)
	list(APPEND IBTRS_LIB_INCLUDES ${LIBFABRIC_INCLUDE_DIRS})
	list(APPEND IBTRS_LIB_LIBRARIES ${CMAKE_DL_LIBS})
	# bench/compare's ofi ceiling: the provider's own loop. Not installed.
	add_executable(ibtrs_ofi_ceiling bench/ofi_ceiling.c)
	set_target_properties(ibtrs_ofi_ceiling PROPERTIES
		OUTPUT_NAME ibtrs-ofi-ceiling)
	target_compile_definitions(ibtrs_ofi_ceiling PRIVATE _GNU_SOURCE)
	target_include_directories(ibtrs_ofi_ceiling PRIVATE
		${LIBFABRIC_INCLUDE_DIRS})
	if(LIBFABRIC_LINK_LIBRARIES)
		target_link_libraries(ibtrs_ofi_ceiling PRIVATE
			${LIBFABRIC_LINK_LIBRARIES})
	else()
		target_link_libraries(ibtrs_ofi_ceiling PRIVATE
			${LIBFABRIC_LDFLAGS})
	endif()
	message(STATUS "ofi backend: libfabric ${LIBFABRIC_VERSION}")
else()
	message(STATUS "ofi backend: libfabric not found, not built")
endif()
