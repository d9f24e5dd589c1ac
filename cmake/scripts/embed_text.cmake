# Writes the bytes of INPUT as a C initializer list ("0x7b,0x0a,...") to OUTPUT, for a file that
# a program embeds at build time (cmake -DINPUT=... -DOUTPUT=... -P embed_text.cmake).
if(NOT INPUT OR NOT OUTPUT)
  message(FATAL_ERROR "usage: cmake -DINPUT=... -DOUTPUT=... -P embed_text.cmake")
endif()
file(READ "${INPUT}" _hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," _bytes "${_hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n"
       _bytes "${_bytes}")
file(WRITE "${OUTPUT}.tmp" "${_bytes}\n")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
