import CSandboxProbe
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The worker's seccomp filter (CSandbox, docs/SECURITY.md "W^X"), applied in a forked child: memory that is
/// writable and executable, or executable at all once the filter is in, is refused with EPERM (as systemd's
/// MemoryDenyWriteExecute refuses it); the mappings the worker needs (malloc, buffers, its memfd pools, read-only
/// protection) still work.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct SandboxFilterTests {
    func probe(_ operation: trackd_probe_operation) throws -> trackd_probe_result {
        var result = trackd_probe_result()
        #expect(trackd_probe_in_sandbox(operation, &result) == 0, "fork/wait failed: errno \(errno)")
        let message = withUnsafeBytes(of: result.error) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        #expect(result.entered == 1, "the child did not enter the sandbox: \(message)")
        #expect(result.signal_number == 0, "the child was killed by signal \(result.signal_number)")
        return result
    }

    @Test(arguments: [trackd_probe_mmap_rwx, trackd_probe_mmap_rx_anonymous, trackd_probe_mprotect_rw_to_rx,
                      trackd_probe_mmap_memfd_rx, trackd_probe_pkey_mprotect_rx])
    func executableMemoryIsRefusedWithEPERM(_ operation: trackd_probe_operation) throws {
        let r = try probe(operation)
        #expect(r.succeeded == 0, "operation \(operation.rawValue) succeeded under the filter")
        #expect(r.error_number == EPERM, "operation \(operation.rawValue): errno \(r.error_number)")
    }

    @Test(arguments: [trackd_probe_mmap_rw, trackd_probe_mprotect_rw_to_r, trackd_probe_mmap_memfd_rw_shared])
    func theMappingsTheWorkerNeedsStillWork(_ operation: trackd_probe_operation) throws {
        let r = try probe(operation)
        #expect(r.succeeded == 1, "operation \(operation.rawValue) failed: errno \(r.error_number)")
    }

    /// ORC under the sandbox (CSandbox's OrcSeal.c): code generated before it still runs, from a private r-x
    /// mapping of a sealed memfd; ORC's writable alias (the orcexec file) is gone and nothing is writable and
    /// executable or shared and executable; a program first compiled after the filter gets no generated code but
    /// runs its C backup, with the right bytes, and the child is not killed.
    @Test func orcCodeCompiledBeforeTheFilterIsSealedAndLaterProgramsFallBack() throws {
        var r = trackd_orc_probe_result()
        #expect(trackd_probe_orc_in_sandbox(&r) == 0, "fork/wait failed: errno \(errno)")
        let message = withUnsafeBytes(of: r.error) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        #expect(r.signal_number == 0, "the child was killed by signal \(r.signal_number)")
        #expect(r.entered == 1, "the child did not enter the sandbox: \(message)")
        #expect(r.code_memory_available == 1, "ORC cannot map code in this process: the test proves nothing here")
        #expect(r.compiled_before == 1, "ORC did not generate code before the sandbox")
        #expect(r.compiled_output_right == 1, "the code generated before the sandbox gave wrong bytes after it")
        #expect(r.compiled_code_sealed == 1, "the generated code is not in the sealed mapping")
        #expect(r.sealed_mappings >= 1)
        #expect(r.orc_file_mappings == 0, "ORC's orcexec file (its writable alias) is still mapped")
        #expect(r.writable_executable == 0, "a mapping is writable or shared, and executable")
        #expect(r.later_compiled == 0, "a program compiled after the filter got generated code")
        #expect(r.later_ran_backup == 1 && r.later_output_right == 1, "the later program's C backup did not run right")
    }

    /// Without the filter the refused operations work: the refusals above are the filter's, not the kernel's.
    @Test func withoutTheFilterWritableExecutableMemoryIsAllowedHere() {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let p = mmap(nil, page, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        #expect(p != MAP_FAILED, "this process cannot map RWX memory (errno \(errno)): the refusals prove nothing here")
        if let p, p != MAP_FAILED { munmap(p, page) }
    }
}
