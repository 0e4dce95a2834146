// A fixed set of worker threads running tasks in submission order, each task's result
// delivered through a future. The reader keeps a bounded number of tasks in flight and takes
// their results in order, so work is parallel but what it builds is sequential.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace gpuscope {

class WorkPool {
 public:
  explicit WorkPool(unsigned threads) {
    for (unsigned i = 0; i < threads; ++i) workers_.emplace_back([this] { work(); });
  }
  ~WorkPool() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    ready_.notify_all();
    for (auto& t : workers_) t.join();
  }
  WorkPool(const WorkPool&) = delete;
  WorkPool& operator=(const WorkPool&) = delete;

  size_t threads() const { return workers_.size(); }

  // Runs `task` on a worker; tasks that were submitted are all run, even while the pool is
  // being destroyed.
  template <typename F>
  std::future<std::invoke_result_t<F>> submit(F task) {
    auto packaged = std::make_shared<std::packaged_task<std::invoke_result_t<F>()>>(std::move(task));
    auto result = packaged->get_future();
    {
      std::lock_guard lock(mutex_);
      tasks_.emplace_back([packaged] { (*packaged)(); });
    }
    ready_.notify_one();
    return result;
  }

 private:
  void work() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
        if (tasks_.empty()) return;
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
    }
  }

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace gpuscope
