// ThreadSanitizer and a value handed to a Swift task through a continuation (docs/SECURITY.md § Sanitizers,
// CTrackSys/TsanMutex.c): the evidence that the AsyncSamplesTests report was TSan not seeing the Swift runtime's
// ordering, not a race. Not part of any build. Run:
//   swiftc -sanitize=thread -g -Onone scripts/sanitize/continuation-handoff.swift -o /tmp/handoff
//   for m in fast slow annotated; do TSAN_OPTIONS=halt_on_error=0 /tmp/handoff $m; done
// A thread builds an object, writes a field and resumes the continuation; the task reads the field.
//   fast       the closure spins (relaxed atomic: nothing TSan counts as ordering) until the thread has resumed, so
//              the await finds the continuation already resumed: one "data race" report (Swift 6.3.1)
//   slow       the thread resumes 200 ms later, after the task has suspended: no report (the runtime annotates the
//              task's enqueue and run)
//   annotated  as fast, with __tsan_release before the resume and __tsan_acquire after the await, as SamplePump
//              does through trackd_tsan_handoff_release/acquire: no report
// Every mode prints sum 840 (20 hand-offs of 42).
import Foundation
import Dispatch
import Synchronization

final class Box: @unchecked Sendable { var value = 0 }
final class Flag: Sendable { let a = Atomic<Bool>(false) }

@_silgen_name("__tsan_release") func tsanRelease(_ tag: UInt)
@_silgen_name("__tsan_acquire") func tsanAcquire(_ tag: UInt)
let tag: UInt = 0x1000
let mode = CommandLine.arguments.dropFirst().first ?? "fast"
@Sendable func handOff() async -> Int {
    let box = await withCheckedContinuation { (c: CheckedContinuation<Box, Never>) in
        let done = Flag()  // relaxed: no happens-before that TSan could see
        let t = Thread {
            if mode == "slow" { usleep(200_000) }
            let b = Box()
            b.value = 42          // plain write on the thread
            if mode == "annotated" { tsanRelease(tag) }
            c.resume(returning: b)
            done.a.store(true, ordering: .relaxed)
        }
        t.start()
        if mode != "slow" { while !done.a.load(ordering: .relaxed) { sched_yield() } }
    }
    if mode == "annotated" { tsanAcquire(tag) }
    return box.value              // plain read in the task
}
let sem = DispatchSemaphore(value: 0)
Task.detached {
    var sum = 0
    for _ in 0..<20 { sum += await handOff() }
    print("mode \(mode): sum \(sum)")
    sem.signal()
}
sem.wait()
