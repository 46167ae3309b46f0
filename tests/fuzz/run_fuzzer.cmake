# ctest -P script: runs one fuzzer for SECONDS over a fresh copy of its seeds
# (files, or every file of a folder) in CORPUS, with DICT if given. Fails on any
# crash, sanitizer report, leak, slow input (5 s) or memory blow-up (2 GB).
file(REMOVE_RECURSE ${CORPUS})
file(MAKE_DIRECTORY ${CORPUS})
set(index 0)
foreach(seed IN LISTS SEEDS)
  if(IS_DIRECTORY ${seed})
    file(GLOB files LIST_DIRECTORIES false ${seed}/*)
  elseif(EXISTS ${seed})
    set(files ${seed})
  else()
    message(FATAL_ERROR "seed ${seed} is missing (build the project first)")
  endif()
  foreach(file IN LISTS files)
    # Numbered: several seeds share a name (exercises/*/exercise.yaml).
    get_filename_component(base ${file} NAME)
    math(EXPR index "${index} + 1")
    file(COPY_FILE ${file} ${CORPUS}/seed-${index}-${base})
  endforeach()
endforeach()
if(index EQUAL 0)
  message(FATAL_ERROR "no seeds for ${BINARY}")
endif()
set(dict_option)
if(DICT)
  set(dict_option -dict=${DICT})
endif()
execute_process(COMMAND ${BINARY} ${CORPUS} ${dict_option} -max_total_time=${SECONDS} -timeout=5
                        -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix=${CORPUS}-
                RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "the fuzzer found a problem (exit ${result}); the input is beside ${CORPUS}")
endif()
