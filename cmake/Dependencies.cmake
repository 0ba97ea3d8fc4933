# Every dependency comes from a package (Debian bookworm's, or their files unpacked into a
# prefix given by CMAKE_PREFIX_PATH on hosts without a registry). Nothing is downloaded.

# Boost.Multiprecision is header-only. CMake >= 3.30 has no FindBoost: use Boost's own config.
find_package(Boost 1.74 CONFIG REQUIRED)
if(TARGET Boost::headers)
  set(RMSNORM_BOOST_TARGET Boost::headers)
else()
  set(RMSNORM_BOOST_TARGET Boost::boost)
endif()

find_package(OpenMP REQUIRED COMPONENTS CXX)

if(RMSNORM_TESTS)
  # Catch2 2.13 (Debian) or 3.x (e.g. Ubuntu 24.04); the compat header picks the API.
  find_package(Catch2 CONFIG REQUIRED)
  set(RMSNORM_CATCH2_MAJOR 2)
  if(Catch2_VERSION VERSION_GREATER_EQUAL 3)
    set(RMSNORM_CATCH2_MAJOR 3)
  endif()
  message(STATUS "Catch2 ${Catch2_VERSION} found (API ${RMSNORM_CATCH2_MAJOR})")
  # RapidCheck has no version file and no namespace: targets rapidcheck, rapidcheck_catch.
  find_package(rapidcheck CONFIG REQUIRED)
endif()
