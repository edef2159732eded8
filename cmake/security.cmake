# security.cmake - the crypto libraries.
#
# Included by the top CMakeLists.txt before the library targets exist.
# nettle and hogweed (X25519, HMAC-SHA-256) are required: every connection
# is authenticated, so there is no build without them. GnuTLS (TLS 1.3 with
# pre-shared keys on the tcp backend) is optional: without it the library
# builds without TLS, says so here, and refuses a TLS mode at open with an
# error naming the missing library; the TLS tests skip (exit 77).
find_package(PkgConfig REQUIRED)
pkg_check_modules(NETTLE QUIET nettle hogweed)
if(NOT NETTLE_FOUND)
	message(FATAL_ERROR "nettle and hogweed not found: install nettle-dev "
		"(scripts/deps.sh does), needed for connection authentication")
endif()
list(APPEND IBTRS_LIB_INCLUDES ${NETTLE_INCLUDE_DIRS})
if(NETTLE_LINK_LIBRARIES)
	list(APPEND IBTRS_LIB_LIBRARIES ${NETTLE_LINK_LIBRARIES})
else()
	list(APPEND IBTRS_LIB_LIBRARIES ${NETTLE_LDFLAGS})
endif()
set(IBTRS_PC_PRIVATE_CRYPTO "-lhogweed -lnettle")

option(IBTRS_WITH_TLS "Build TLS on the tcp backend when GnuTLS is found" ON)
set(IBTRS_HAVE_TLS OFF)
if(IBTRS_WITH_TLS)
	pkg_check_modules(GNUTLS QUIET gnutls>=3.6.5)
	if(GNUTLS_FOUND)
		set(IBTRS_HAVE_TLS ON)
		list(APPEND IBTRS_LIB_DEFINITIONS IBTRS_HAVE_TLS)
		list(APPEND IBTRS_LIB_INCLUDES ${GNUTLS_INCLUDE_DIRS})
		if(GNUTLS_LINK_LIBRARIES)
			list(APPEND IBTRS_LIB_LIBRARIES ${GNUTLS_LINK_LIBRARIES})
		else()
			list(APPEND IBTRS_LIB_LIBRARIES ${GNUTLS_LDFLAGS})
		endif()
		set(IBTRS_PC_PRIVATE_CRYPTO "${IBTRS_PC_PRIVATE_CRYPTO} -lgnutls")
	else()
		message(STATUS "GnuTLS >= 3.6.5 not found (libgnutls28-dev): "
			"building without TLS; --tls on|require will be refused")
	endif()
else()
	message(STATUS "IBTRS_WITH_TLS=OFF: building without TLS")
endif()
