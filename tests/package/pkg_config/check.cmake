# Package test (c), cmake -P: build the consumer against an installed memhealth with nothing but
# `pkg-config --cflags --libs memhealth` and a compiler, then run it.
#   -DPREFIX=<install prefix> -DCOMPILER=<c++> -DPKG_CONFIG=<pkg-config> -DSOURCE=<consumer.cpp>
#   -DOUTPUT=<executable to write> -DVERSION=<expected version>
#   -DPCDIR=<directory of memhealth.pc relative to PREFIX>
set(ENV{PKG_CONFIG_PATH} "${PREFIX}/${PCDIR}")

function(pc_query out)
  execute_process(COMMAND "${PKG_CONFIG}" ${ARGN} memhealth
                  RESULT_VARIABLE rc OUTPUT_VARIABLE text ERROR_VARIABLE err
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "pkg-config ${ARGN} memhealth failed:\n${err}")
  endif()
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

pc_query(version --modversion)
if(NOT version STREQUAL VERSION)
  message(FATAL_ERROR "memhealth.pc says version '${version}', expected '${VERSION}'")
endif()
pc_query(prefix --variable=prefix)  # derived from ${pcfiledir}: must point at the install prefix
file(REAL_PATH "${prefix}" prefix)
file(REAL_PATH "${PREFIX}" expected_prefix)
if(NOT prefix STREQUAL expected_prefix)
  message(FATAL_ERROR "memhealth.pc prefix is '${prefix}', expected '${expected_prefix}'")
endif()

pc_query(cflags --cflags)
pc_query(libs --libs)
separate_arguments(cflags UNIX_COMMAND "${cflags}")
separate_arguments(libs UNIX_COMMAND "${libs}")
execute_process(
  COMMAND "${COMPILER}" -std=c++20 ${cflags} "-DMEMHEALTH_EXPECTED_VERSION=\"${VERSION}\""
          "${SOURCE}" -o "${OUTPUT}" ${libs}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "compiling with pkg-config flags failed:\n${cflags} ... ${libs}\n${out}")
endif()
execute_process(COMMAND "${OUTPUT}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
message("${out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the pkg-config consumer failed (exit ${rc})")
endif()
