# ctest -P script: runs one fuzzer for SECONDS over a fresh copy of its seeds
# (files, or every file of a folder) in CORPUS, with DICT if given. Fails on any
# crash, sanitizer report, leak, slow input (5 s) or memory blow-up (2 GB).
file(REMOVE_RECURSE ${CORPUS})
file(GLOB earlier_findings LIST_DIRECTORIES false ${CORPUS}-*)  # an earlier run's: not this one's
if(earlier_findings)
  file(REMOVE ${earlier_findings})
endif()
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
                RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
if(NOT result EQUAL 0)
  # The whole run, then why, in a few lines at the end (a log cut to its tail
  # still shows the finding): the sanitizer's or libFuzzer's verdict and the input.
  message("${output}")
  string(REGEX MATCHALL "[^\n]*(ERROR|SUMMARY|DEADLY|deadly signal|Test unit written|Base64|out-of-memory|timeout)[^\n]*"
         why "${output}")
  list(JOIN why "\n  " why)
  file(GLOB found LIST_DIRECTORIES false ${CORPUS}-*)
  set(inputs "")
  foreach(file IN LISTS found)
    file(READ ${file} head LIMIT 300 HEX)
    string(APPEND inputs "\n  ${file} (first bytes, hex): ${head}")
  endforeach()
  message(FATAL_ERROR "the fuzzer found a problem (exit ${result}):\n  ${why}${inputs}")
endif()
message("${output}")
