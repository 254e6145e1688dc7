import Foundation
import SamplePools
import TestSupport
import Testing
import Synchronization

@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct RangeScheduleTests {
    @Test func theEndOfARangeAnnouncesOnceThenWaits() {
        var schedule = RangeSchedule<Int>()
        guard case .announce = schedule.next() else { Issue.record("expected announce"); return }
        #expect(schedule.awaitingReset)
        guard case .wait = schedule.next() else { Issue.record("expected wait"); return }
    }

    @Test func aResetGivesItsRangesInOrder() throws {
        var schedule = RangeSchedule<Int>()
        _ = schedule.next()
        try schedule.reset([3, 5])
        var got: [Int] = []
        while case .range(let r) = schedule.next() { got.append(r) }
        #expect(got == [3, 5])
        guard case .wait = schedule.next() else { Issue.record("expected wait after the announce"); return }
    }

    @Test func aResetBeforeRangeEndedIsRefused() {
        var schedule = RangeSchedule<Int>()
        #expect(throws: RangeSchedule<Int>.ResetRefusal.notAwaiting) { try schedule.reset([1]) }
        _ = schedule.next()
        #expect(throws: Never.self) { try schedule.reset([1]) }
        #expect(throws: RangeSchedule<Int>.ResetRefusal.notAwaiting) { try schedule.reset([2]) }
    }

    @Test func finishCompletesAfterThePendingRanges() throws {
        var schedule = RangeSchedule<Int>()
        _ = schedule.next()
        try schedule.reset([1])
        schedule.markFinal()
        guard case .range(1) = schedule.next() else { Issue.record("expected range 1"); return }
        guard case .completed = schedule.next() else { Issue.record("expected completed"); return }
        #expect(throws: RangeSchedule<Int>.ResetRefusal.notAwaiting) { try schedule.reset([2]) }
    }
}

@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct StateMonitorTests {
    @Test func aWaiterWakesOnTheChangeItWaitsFor() {
        let monitor = StateMonitor(0)
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<(Int, Bool)?>(nil)
        Thread {
            let answer = monitor.wait(until: { $0 >= 3 ? $0 : nil })
            result.withLock { $0 = answer }
            done.signal()
        }.start()
        for _ in 0..<3 {
            monitor.withLock { $0 += 1 }
        }
        // Generous: the wait has no timeout of its own, the change wakes it.
        #expect(done.wait(timeout: .now() + 10) == .success)
        let (value, waited) = result.withLock { $0 } ?? (-1, false)
        #expect(value == 3)
        _ = waited  // whether it slept depends on scheduling
    }

    @Test func blockedRunsOnceBeforeTheFirstSleepAndNotWhenTheAnswerIsReady() {
        let monitor = StateMonitor(1)
        var blockedCalls = 0
        let (answer, waited) = monitor.wait(until: { $0 > 0 ? $0 : nil }, blocked: { blockedCalls += 1 })
        #expect(answer == 1 && !waited && blockedCalls == 0)
        // The answer arrives while `blocked` runs (outside the lock): the step is asked again, no sleep.
        let other = StateMonitor(0)
        var calls = 0
        let (late, slept) = other.wait(until: { $0 > 0 ? $0 : nil }, blocked: {
            calls += 1
            other.withLock { $0 = 7 }
        })
        #expect(late == 7 && slept && calls == 1)
    }
}
