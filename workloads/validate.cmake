# scripts/validate's table-building logic (scripts/validate_table.py), tested on a hand-made
# fixture in testdata/validate/; needs only Python 3, no GPU. Included from workloads/CMakeLists.txt.
if(GPUSCOPE_TESTS)
  find_package(Python3 COMPONENTS Interpreter REQUIRED)
  add_test(NAME validate_table_test
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/validate_table_test.py)
  set_tests_properties(validate_table_test PROPERTIES ENVIRONMENT "GPUSCOPE_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
endif()
