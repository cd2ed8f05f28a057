# Dependencies of the header-only library, all from Debian's packages (scripts/install-deps.sh).
#
# Included twice, so keep it free of project-only logic:
# - by the top-level CMakeLists.txt (a missing dependency is a hard configure error), and
# - by the installed memhealthConfig.cmake, which sets _memhealth_in_config first: there every
#   lookup goes through find_dependency(), so find_package(memhealth) reports "not found" with a
#   reason (or fails, if the consumer asked REQUIRED) instead of aborting the consumer's configure.
#
# Provides the targets memhealth links to: Eigen3::Eigen, Boost::headers, simdjson::simdjson,
# nlohmann_json::nlohmann_json, Threads::Threads, ZLIB::ZLIB and
# memhealth::utf8proc (utf8proc has no CMake package on Debian: imported through pkg-config).
include(CMakeFindDependencyMacro)

macro(_memhealth_find_dependency)
  if(_memhealth_in_config)
    find_dependency(${ARGN})
  else()
    find_package(${ARGN} REQUIRED)
  endif()
endmacro()

macro(_memhealth_dependency_error message)
  if(_memhealth_in_config)
    set(memhealth_NOT_FOUND_MESSAGE "${message}")
    set(memhealth_FOUND FALSE)
    return()
  else()
    message(FATAL_ERROR "${message}")
  endif()
endmacro()

# Debian's Eigen 3.4.0 config rejects version ranges: ask unversioned, then check.
_memhealth_find_dependency(Eigen3 CONFIG)
if(Eigen3_VERSION VERSION_LESS 3.4)
  _memhealth_dependency_error(
    "memhealth needs Eigen >= 3.4 (found ${Eigen3_VERSION}); apt-get install libeigen3-dev")
endif()

_memhealth_find_dependency(Boost 1.74)  # Boost::headers (Boost.Container is header-only)
_memhealth_find_dependency(simdjson CONFIG)  # JSONL reading (the hot path; see README)
_memhealth_find_dependency(nlohmann_json 3 CONFIG)  # plan / report / WAL payload JSON writing
_memhealth_find_dependency(Threads)  # the tiled similarity join uses std::jthread
_memhealth_find_dependency(ZLIB)  # gzip plan files (io/gzip_stream.hpp)

if(NOT TARGET memhealth::utf8proc)
  _memhealth_find_dependency(PkgConfig)
  pkg_check_modules(MEMHEALTH_UTF8PROC QUIET IMPORTED_TARGET libutf8proc)
  if(NOT MEMHEALTH_UTF8PROC_FOUND)
    _memhealth_dependency_error(
      "memhealth needs utf8proc (pkg-config module libutf8proc); apt-get install libutf8proc-dev")
  endif()
  add_library(memhealth::utf8proc INTERFACE IMPORTED)
  target_link_libraries(memhealth::utf8proc INTERFACE PkgConfig::MEMHEALTH_UTF8PROC)
endif()
