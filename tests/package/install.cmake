# Fixture setup of the package tests, cmake -P: a fresh install of the build tree into PREFIX.
#   -DBUILD_DIR=<memhealth build tree> -DPREFIX=<install prefix> -DCONFIG=<build configuration>
#   -DEXPECT_FILES=<files relative to PREFIX that must exist, separated by |>
file(REMOVE_RECURSE "${PREFIX}")
execute_process(
  COMMAND "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${PREFIX}" --config "${CONFIG}"
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install into ${PREFIX} failed (exit ${rc})")
endif()
string(REPLACE "|" ";" EXPECT_FILES "${EXPECT_FILES}")
foreach(f IN LISTS EXPECT_FILES)
  if(NOT EXISTS "${PREFIX}/${f}")
    message(FATAL_ERROR "install is missing ${f}")
  endif()
endforeach()
