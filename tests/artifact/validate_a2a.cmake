# Runs the exporter, then the schema validator on its output; fails when either fails.
if(NOT PYTHON)
  message(FATAL_ERROR "no /usr/bin/python3: install python3-jsonschema (scripts/deps does)")
endif()
execute_process(COMMAND "${EXPORTER}" "${OUT}" COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND "${PYTHON}" "${VALIDATOR}" "${SCHEMA}" "${OUT}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "A2A schema validation failed (${rc})")
endif()
