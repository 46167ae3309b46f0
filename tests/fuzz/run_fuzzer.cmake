# Runs one fuzzer for SECONDS over a fresh copy of its seeds (ctest -P script).
file(REMOVE_RECURSE ${CORPUS})
file(MAKE_DIRECTORY ${CORPUS})
foreach(seed IN LISTS SEEDS)
  if(IS_DIRECTORY ${seed})
    file(GLOB files ${seed}/*)
    file(COPY ${files} DESTINATION ${CORPUS})
  elseif(EXISTS ${seed})
    file(COPY ${seed} DESTINATION ${CORPUS})
  endif()
endforeach()
execute_process(COMMAND ${BINARY} ${CORPUS} -max_total_time=${SECONDS} -timeout=5 -rss_limit_mb=2048
                        -print_final_stats=1 -artifact_prefix=${CORPUS}-
                RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "the fuzzer found a problem (exit ${result}); the input is beside ${CORPUS}")
endif()
