# The reference interpreter's sources (target emu), relative to jit/.
set(PRIMJIT_EMU_SOURCES)
