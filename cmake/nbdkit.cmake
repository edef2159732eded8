# nbdkit.cmake - the nbdkit plugin (src/nbdkit/plugin.c): every NBD client
# reaches an ibnbd export through `nbdkit ibtrs path=... export=...`.
#
# Included by the top CMakeLists.txt after libibnbd. Built only when
# pkg-config finds nbdkit (nbdkit-plugin-dev). The module is named
# nbdkit-ibtrs-plugin.so, as nbdkit looks plugins up by name, and is
# installed into nbdkit's plugin directory re-rooted under
# CMAKE_INSTALL_PREFIX: with the prefix /usr that is nbdkit's own
# directory, so `nbdkit ibtrs` finds it. IBTRS_NBDKIT_PLUGINDIR overrides.
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
	pkg_check_modules(NBDKIT QUIET nbdkit)
endif()

if(NOT NBDKIT_FOUND)
	message(STATUS "nbdkit plugin: nbdkit not found by pkg-config "
		"(nbdkit-plugin-dev), not built")
	return()
endif()

add_library(nbdkit_ibtrs_plugin MODULE src/nbdkit/plugin.c)
set_target_properties(nbdkit_ibtrs_plugin PROPERTIES
	OUTPUT_NAME nbdkit-ibtrs-plugin PREFIX "" SUFFIX ".so"
	C_VISIBILITY_PRESET hidden)
target_compile_definitions(nbdkit_ibtrs_plugin PRIVATE _GNU_SOURCE)
target_include_directories(nbdkit_ibtrs_plugin PRIVATE
	${NBDKIT_INCLUDE_DIRS})
target_compile_options(nbdkit_ibtrs_plugin PRIVATE ${NBDKIT_CFLAGS_OTHER})
target_link_libraries(nbdkit_ibtrs_plugin PRIVATE ibnbd ibtrs
	Threads::Threads)
# nbdkit dlclose()s the plugin before exit(); libibtrs registers an
# atexit() handler (the control socket's unlink), and sanitizer runtimes
# intercept atexit() without tying it to the library, so an unloaded
# libibtrs would be called into at exit. Never unloading the plugin keeps
# it and its libraries mapped until the process ends.
target_link_options(nbdkit_ibtrs_plugin PRIVATE -Wl,-z,nodelete)

# nbdkit's plugindir, relative to its libdir (else its prefix), re-rooted.
if(NOT IBTRS_NBDKIT_PLUGINDIR)
	pkg_get_variable(NBDKIT_PLUGINDIR nbdkit plugindir)
	pkg_get_variable(NBDKIT_PREFIX nbdkit prefix)
	pkg_get_variable(NBDKIT_LIBDIR nbdkit libdir)
	set(dir "${CMAKE_INSTALL_LIBDIR}/nbdkit/plugins")
	if(NBDKIT_PLUGINDIR AND NBDKIT_LIBDIR AND
			NBDKIT_PLUGINDIR MATCHES "^${NBDKIT_LIBDIR}/")
		file(RELATIVE_PATH rel "${NBDKIT_LIBDIR}" "${NBDKIT_PLUGINDIR}")
		set(dir "${CMAKE_INSTALL_LIBDIR}/${rel}")
	elseif(NBDKIT_PLUGINDIR AND NBDKIT_PREFIX AND
			NBDKIT_PLUGINDIR MATCHES "^${NBDKIT_PREFIX}/")
		file(RELATIVE_PATH dir "${NBDKIT_PREFIX}" "${NBDKIT_PLUGINDIR}")
	endif()
	set(IBTRS_NBDKIT_PLUGINDIR "${dir}" CACHE STRING
		"Where the nbdkit plugin is installed, relative to the prefix")
endif()

# The installed module finds libibnbd and libibtrs in this prefix's libdir
# wherever the prefix ends up.
if(IS_ABSOLUTE "${IBTRS_NBDKIT_PLUGINDIR}")
	set(plugin_abs "${IBTRS_NBDKIT_PLUGINDIR}")
else()
	set(plugin_abs "${CMAKE_INSTALL_PREFIX}/${IBTRS_NBDKIT_PLUGINDIR}")
endif()
file(RELATIVE_PATH plugin_rpath "${plugin_abs}" "${CMAKE_INSTALL_FULL_LIBDIR}")
if(plugin_rpath STREQUAL "")
	set(plugin_rpath ".")
endif()
set_target_properties(nbdkit_ibtrs_plugin PROPERTIES
	INSTALL_RPATH "$ORIGIN/${plugin_rpath}")
install(TARGETS nbdkit_ibtrs_plugin
	LIBRARY DESTINATION "${IBTRS_NBDKIT_PLUGINDIR}")
message(STATUS "nbdkit plugin: nbdkit ${NBDKIT_VERSION}, installed into "
	"${IBTRS_NBDKIT_PLUGINDIR}")
