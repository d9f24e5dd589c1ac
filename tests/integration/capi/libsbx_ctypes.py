"""The installed libsbx through ctypes, as a binding would load it: shared by the capi tests
that count what a warm manager does (warm_exec_lookups.py, warm_mount_table.py)."""
import ctypes
import glob
import os
import sys


def libsbx_under(prefix):
    """The shortest libsbx.so* name under PREFIX: the SONAME link (a binding loads that one)."""
    names = glob.glob(os.path.join(prefix, "lib*", "libsbx.so*"))
    names += glob.glob(os.path.join(prefix, "lib*", "*", "libsbx.so*"))
    if not names:
        sys.exit(f"no libsbx.so* under {prefix}")
    return min(names, key=len)


def load(path):
    """libsbx at PATH with the prototypes of the calls these tests make (sbx/sbx.h)."""
    lib = ctypes.CDLL(path)
    out_error = ctypes.POINTER(ctypes.c_void_p)
    argv = ctypes.POINTER(ctypes.c_char_p)
    lib.sbx_manager_new.restype = ctypes.c_void_p
    lib.sbx_manager_new.argtypes = [ctypes.c_char_p, out_error]
    lib.sbx_manager_free.argtypes = [ctypes.c_void_p]
    lib.sbx_exec.restype = ctypes.c_void_p
    lib.sbx_exec.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, argv,
                             ctypes.c_char_p, ctypes.c_uint, out_error]
    lib.sbx_transform.restype = ctypes.c_void_p
    lib.sbx_transform.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, argv,
                                  ctypes.c_char_p, out_error]
    lib.sbx_string_free.argtypes = [ctypes.c_void_p]
    lib.sbx_error_message.restype = ctypes.c_char_p
    lib.sbx_error_message.argtypes = [ctypes.c_void_p]
    return lib
