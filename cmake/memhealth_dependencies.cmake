# Dependencies of the header-only library, all from Debian's packages (scripts/install-deps.sh).
# Also included by memhealthConfig.cmake for consumers, so keep it free of project-only logic.
include(CMakeFindDependencyMacro)

# Debian's Eigen 3.4.0 config rejects version ranges: ask unversioned, then check.
find_package(Eigen3 CONFIG REQUIRED)
if(Eigen3_VERSION VERSION_LESS 3.4)
  message(FATAL_ERROR "memhealth needs Eigen >= 3.4 (found ${Eigen3_VERSION}); apt-get install libeigen3-dev")
endif()

find_package(Boost 1.74 REQUIRED)  # Boost::headers (Boost.Container is header-only)
find_package(simdjson CONFIG REQUIRED)  # JSONL reading (see README: chosen by measurement)

if(NOT TARGET memhealth::utf8proc)
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(MEMHEALTH_UTF8PROC REQUIRED IMPORTED_TARGET libutf8proc)
  add_library(memhealth::utf8proc INTERFACE IMPORTED)
  target_link_libraries(memhealth::utf8proc INTERFACE PkgConfig::MEMHEALTH_UTF8PROC)
endif()
