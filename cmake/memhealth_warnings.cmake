# Warnings and sanitizers for memhealth's own targets only (never on the INTERFACE target).
option(MEMHEALTH_WERROR "Treat warnings as errors in memhealth's own targets" ON)
set(MEMHEALTH_SANITIZE "" CACHE STRING "Sanitizers for memhealth's own targets, e.g. address,undefined")

function(memhealth_target_defaults target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic)
  if(MEMHEALTH_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(MEMHEALTH_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=${MEMHEALTH_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
    target_link_options(${target} PRIVATE -fsanitize=${MEMHEALTH_SANITIZE})
  endif()
endfunction()
