# ibnbd.cmake - libibnbd, the block layer over ibtrs (include/ibnbd.h).
#
# Included by the top CMakeLists.txt after the ibtrs targets exist. ibnbd
# is a consumer of the public ibtrs API only: it links the shared libibtrs
# and includes nothing of src/ but its own folder. The server's I/O needs
# liburing; without it the server calls fail with EOPNOTSUPP and say so,
# and the client is built all the same.
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
	pkg_check_modules(LIBURING QUIET liburing)
endif()

file(GLOB IBNBD_SOURCES CONFIGURE_DEPENDS src/ibnbd/*.c)
add_library(ibnbd_obj OBJECT ${IBNBD_SOURCES})
set_target_properties(ibnbd_obj PROPERTIES POSITION_INDEPENDENT_CODE ON
	C_VISIBILITY_PRESET hidden)
target_include_directories(ibnbd_obj PUBLIC include PRIVATE src/ibnbd)
target_compile_definitions(ibnbd_obj PRIVATE _GNU_SOURCE IBNBD_BUILD)
set(IBNBD_LIBRARIES "")
if(LIBURING_FOUND)
	target_compile_definitions(ibnbd_obj PRIVATE IBNBD_HAVE_URING)
	target_include_directories(ibnbd_obj PRIVATE ${LIBURING_INCLUDE_DIRS})
	if(LIBURING_LINK_LIBRARIES)
		set(IBNBD_LIBRARIES ${LIBURING_LINK_LIBRARIES})
	else()
		set(IBNBD_LIBRARIES ${LIBURING_LDFLAGS})
	endif()
	set(IBNBD_PC_PRIVATE_LIBS "-luring")
	message(STATUS "ibnbd server: liburing ${LIBURING_VERSION}")
else()
	message(STATUS "ibnbd server: liburing not found (liburing-dev), "
		"the server fails with EOPNOTSUPP")
endif()

add_library(ibnbd SHARED $<TARGET_OBJECTS:ibnbd_obj>)
set_target_properties(ibnbd PROPERTIES VERSION ${PROJECT_VERSION}
	SOVERSION ${PROJECT_VERSION_MAJOR}
	LINK_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/ibnbd/libibnbd.map)
target_link_options(ibnbd PRIVATE
	-Wl,--version-script=${CMAKE_CURRENT_SOURCE_DIR}/src/ibnbd/libibnbd.map
	-Wl,--no-undefined)
target_link_libraries(ibnbd PUBLIC ibtrs PRIVATE Threads::Threads
	${IBNBD_LIBRARIES})

# Static archive for unit tests that reach the wire format.
add_library(ibnbd_static STATIC $<TARGET_OBJECTS:ibnbd_obj>)
target_link_libraries(ibnbd_static PUBLIC ibtrs Threads::Threads
	${IBNBD_LIBRARIES})
target_include_directories(ibnbd_static PUBLIC include src/ibnbd)

configure_file(cmake/libibnbd.pc.in libibnbd.pc @ONLY)
install(TARGETS ibnbd LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES include/ibnbd.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/libibnbd.pc
	DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
