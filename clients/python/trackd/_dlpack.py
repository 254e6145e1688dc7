"""DLPack export (https://dmlc.github.io/dlpack/) of a numpy array that may be read-only, with ctypes only.

numpy's own ndarray.__dlpack__ refuses read-only arrays before numpy 2 (DLPack 0.x had no read-only flag), and a
zero-copy frame is a read-only view of trackd's pool (mapped PROT_READ). This module builds the capsule itself:
a versioned one (DLPack 1.0, "dltensor_versioned", with DLPACK_FLAG_BITMASK_READ_ONLY) when the consumer asks for
max_version >= (1, 0) — numpy >= 2.1 and recent torch do — else a legacy "dltensor" one, which cannot say
read-only: the consumer then makes a tensor it believes writable, and writing into it kills the process
(SIGSEGV), so copy before writing in place. The capsule keeps the array (and so its frame and slot) alive until
the consumer's tensor is freed (the DLPack deleter)."""

import ctypes
import sys

kDLCPU = 1
_INT, _UINT, _FLOAT = 0, 1, 2
FLAG_READ_ONLY = 1
FLAG_IS_COPIED = 2


class _Device(ctypes.Structure):
    _fields_ = [('device_type', ctypes.c_int32), ('device_id', ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [('code', ctypes.c_uint8), ('bits', ctypes.c_uint8), ('lanes', ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [('data', ctypes.c_void_p), ('device', _Device), ('ndim', ctypes.c_int32), ('dtype', _DataType),
                ('shape', ctypes.POINTER(ctypes.c_int64)), ('strides', ctypes.POINTER(ctypes.c_int64)),
                ('byte_offset', ctypes.c_uint64)]


_Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class _Managed(ctypes.Structure):
    _fields_ = [('dl_tensor', _Tensor), ('manager_ctx', ctypes.c_void_p), ('deleter', _Deleter)]


class _Version(ctypes.Structure):
    _fields_ = [('major', ctypes.c_uint32), ('minor', ctypes.c_uint32)]


class _ManagedVersioned(ctypes.Structure):
    _fields_ = [('version', _Version), ('manager_ctx', ctypes.c_void_p), ('deleter', _Deleter),
                ('flags', ctypes.c_uint64), ('dl_tensor', _Tensor)]


_NAME = b'dltensor'
_NAME_VERSIONED = b'dltensor_versioned'
_alive = {}  # address of a managed tensor -> what it needs alive (the struct, shape/strides, the array)

_New = ctypes.pythonapi.PyCapsule_New
_New.restype = ctypes.py_object
_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_IsValid = ctypes.pythonapi.PyCapsule_IsValid
_IsValid.restype = ctypes.c_int
_IsValid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_GetPointer = ctypes.pythonapi.PyCapsule_GetPointer
_GetPointer.restype = ctypes.c_void_p
_GetPointer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]


@_Deleter
def _deleter(address):
    """The consumer is done with the tensor (or the capsule was never consumed)."""
    _alive.pop(address, None)


_CapsuleDestructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


@_CapsuleDestructor
def _capsule_destructor(capsule):
    # A consumed capsule was renamed "used_dltensor"(_versioned): the consumer calls the deleter then.
    for name in (_NAME, _NAME_VERSIONED):
        if _IsValid(capsule, name):
            _alive.pop(_GetPointer(capsule, name), None)
            return


def _dtype(array):
    kind, size, order = array.dtype.kind, array.dtype.itemsize, array.dtype.byteorder
    if order == ('<' if sys.byteorder == 'big' else '>') and size > 1:
        raise BufferError('DLPack has no byte order: %s data (e.g. b64a) cannot be exported; use .array.copy() '
                          'with astype' % array.dtype)
    code = {'i': _INT, 'u': _UINT, 'f': _FLOAT}.get(kind)
    if code is None:
        raise BufferError('dtype %s has no DLPack type' % array.dtype)
    return _DataType(code, size * 8, 1)


def export(array, read_only, max_version=None):
    """A DLPack capsule over numpy `array` (kept alive by the capsule / the consumer's tensor)."""
    ndim, item = array.ndim, array.dtype.itemsize
    if any(s % item for s in array.strides):
        raise BufferError('strides %r are not whole elements of %d bytes' % (array.strides, item))
    shape = (ctypes.c_int64 * max(ndim, 1))(*array.shape)
    strides = (ctypes.c_int64 * max(ndim, 1))(*(s // item for s in array.strides))
    tensor = _Tensor(array.__array_interface__['data'][0], _Device(kDLCPU, 0), ndim, _dtype(array),
                     ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64)),
                     ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64)), 0)
    versioned = max_version is not None and tuple(max_version)[0] >= 1
    if versioned:
        managed = _ManagedVersioned(_Version(1, 0), None, _deleter, FLAG_READ_ONLY if read_only else 0, tensor)
        name = _NAME_VERSIONED
    else:
        managed = _Managed(tensor, None, _deleter)
        name = _NAME
    address = ctypes.addressof(managed)
    _alive[address] = (managed, shape, strides, array)
    try:
        return _New(address, name, ctypes.cast(_capsule_destructor, ctypes.c_void_p))
    except BaseException:
        _alive.pop(address, None)
        raise


def device():
    return (kDLCPU, 0)
