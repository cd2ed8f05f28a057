# Install rules: headers (FILE_SET), the exported INTERFACE targets (memhealth::core, ::io,
# ::memhealth), a CMake package
# (memhealthConfig.cmake + memhealthConfigVersion.cmake) and a pkg-config file.
#
# memhealth is header-only, so everything is architecture-independent and goes under
# ${CMAKE_INSTALL_DATADIR} (share/): share/cmake/memhealth and share/pkgconfig, like Eigen does.
# The memhealth command-line tool is installed by tools/memhealth/CMakeLists.txt when it is built.
include(CMakePackageConfigHelpers)

set(MEMHEALTH_INSTALL_CMAKEDIR "${CMAKE_INSTALL_DATADIR}/cmake/memhealth"
    CACHE STRING "Where memhealthConfig.cmake is installed (relative to the prefix)")
set(MEMHEALTH_INSTALL_PKGCONFIGDIR "${CMAKE_INSTALL_DATADIR}/pkgconfig"
    CACHE STRING "Where memhealth.pc is installed (relative to the prefix)")
mark_as_advanced(MEMHEALTH_INSTALL_CMAKEDIR MEMHEALTH_INSTALL_PKGCONFIGDIR)

install(TARGETS memhealth memhealth_core memhealth_io
        EXPORT memhealthTargets
        FILE_SET HEADERS DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
install(EXPORT memhealthTargets
        NAMESPACE memhealth::
        DESTINATION "${MEMHEALTH_INSTALL_CMAKEDIR}")
# memhealth::sqlite in its own export file: memhealthConfig.cmake loads it only when SQLite3 is
# found on the consumer's side (required with COMPONENTS sqlite).
if(TARGET memhealth_sqlite)
  install(TARGETS memhealth_sqlite
          EXPORT memhealthSqliteTargets
          FILE_SET HEADERS DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
  install(EXPORT memhealthSqliteTargets
          NAMESPACE memhealth::
          DESTINATION "${MEMHEALTH_INSTALL_CMAKEDIR}")
endif()

# memhealth::http likewise (loaded when libcurl, OpenSSL and SQLite3 are found).
if(TARGET memhealth_http)
  install(TARGETS memhealth_http
          EXPORT memhealthHttpTargets
          FILE_SET HEADERS DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
  install(EXPORT memhealthHttpTargets
          NAMESPACE memhealth::
          DESTINATION "${MEMHEALTH_INSTALL_CMAKEDIR}")
endif()

# memhealth::pg likewise (loaded when PostgreSQL's libpq is found); only when it links the
# exportable PostgreSQL::PostgreSQL (not a pkg-config target local to this build).
set(_mh_pg_links "")
if(TARGET memhealth_pg)
  get_property(_mh_pg_links TARGET memhealth_pg PROPERTY INTERFACE_LINK_LIBRARIES)
endif()
if("PostgreSQL::PostgreSQL" IN_LIST _mh_pg_links)
  install(TARGETS memhealth_pg
          EXPORT memhealthPgTargets
          FILE_SET HEADERS DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
  install(EXPORT memhealthPgTargets
          NAMESPACE memhealth::
          DESTINATION "${MEMHEALTH_INSTALL_CMAKEDIR}")
  set(_mh_export_pg ON)
endif()

# Build-tree package: find_package(memhealth) with memhealth_DIR (or CMAKE_PREFIX_PATH) set to this
# build directory uses the source tree's headers without installing.
export(EXPORT memhealthTargets NAMESPACE memhealth:: FILE "${PROJECT_BINARY_DIR}/memhealthTargets.cmake")
if(TARGET memhealth_sqlite)
  export(EXPORT memhealthSqliteTargets NAMESPACE memhealth:: FILE "${PROJECT_BINARY_DIR}/memhealthSqliteTargets.cmake")
endif()
if(_mh_export_pg)
  export(EXPORT memhealthPgTargets NAMESPACE memhealth:: FILE "${PROJECT_BINARY_DIR}/memhealthPgTargets.cmake")
endif()
if(TARGET memhealth_http)
  export(EXPORT memhealthHttpTargets NAMESPACE memhealth:: FILE "${PROJECT_BINARY_DIR}/memhealthHttpTargets.cmake")
endif()
configure_file("${PROJECT_SOURCE_DIR}/cmake/memhealth_dependencies.cmake"
               "${PROJECT_BINARY_DIR}/memhealth_dependencies.cmake" COPYONLY)

configure_package_config_file(
  "${PROJECT_SOURCE_DIR}/cmake/memhealthConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/memhealthConfig.cmake"
  INSTALL_DESTINATION "${MEMHEALTH_INSTALL_CMAKEDIR}"
  NO_SET_AND_CHECK_MACRO NO_CHECK_REQUIRED_COMPONENTS_MACRO)
# 0.x follows the same rule as later versions: a consumer asking for 0.1 accepts any 0.y >= 0.1.
write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/memhealthConfigVersion.cmake"
  VERSION "${PROJECT_VERSION}"
  COMPATIBILITY SameMajorVersion
  ARCH_INDEPENDENT)
install(FILES
          "${PROJECT_BINARY_DIR}/memhealthConfig.cmake"
          "${PROJECT_BINARY_DIR}/memhealthConfigVersion.cmake"
          "${PROJECT_SOURCE_DIR}/cmake/memhealth_dependencies.cmake"
        DESTINATION "${MEMHEALTH_INSTALL_CMAKEDIR}")

# pkg-config: the prefix is derived from the .pc file's own location (${pcfiledir}), so the file
# stays right when installed with `cmake --install --prefix <elsewhere>` or relocated.
if(IS_ABSOLUTE "${MEMHEALTH_INSTALL_PKGCONFIGDIR}")
  set(MEMHEALTH_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  set(MEMHEALTH_PC_PREFIX "\${pcfiledir}")
  string(REPLACE "/" ";" _mh_pc_parts "${MEMHEALTH_INSTALL_PKGCONFIGDIR}")
  foreach(_mh_part IN LISTS _mh_pc_parts)
    if(NOT _mh_part STREQUAL "" AND NOT _mh_part STREQUAL ".")
      string(APPEND MEMHEALTH_PC_PREFIX "/..")
    endif()
  endforeach()
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(MEMHEALTH_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(MEMHEALTH_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
configure_file("${PROJECT_SOURCE_DIR}/cmake/memhealth.pc.in" "${PROJECT_BINARY_DIR}/memhealth.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/memhealth.pc" DESTINATION "${MEMHEALTH_INSTALL_PKGCONFIGDIR}")
