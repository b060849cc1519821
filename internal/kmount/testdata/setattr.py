# mount_setattr(AT_FDCWD, PATH, 0, {attr_set, 0, propagation}) for TestWhichCallsTheKernelNotes: setattr.py PATH ATTR_SET PROPAGATION
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
# mount_setattr(dfd, path, flags, attr*, size)
class Attr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64), ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]
a = Attr(int(sys.argv[2], 0), 0, int(sys.argv[3], 0), 0)
r = libc.syscall(442, -100, sys.argv[1].encode(), 0, ctypes.byref(a), ctypes.sizeof(a))
if r != 0:
    e = ctypes.get_errno(); print("mount_setattr:", os.strerror(e)); sys.exit(1)
