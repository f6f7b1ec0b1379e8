#pragma once

#include <atomic>
#include <memory>

class DatabaseService;

// A settlement on its way (DatabaseService::expectSettlement): taken when a metered request
// begins, handed to DatabaseService::settle() or recordUsage() with its record, or dropped
// (destroyed) if the request ends without one. While any is out, the writer waits briefly for
// small batches to grow (DatabaseService.h). Any thread; movable, not copyable. Its own header
// so that the request context can hold one without the database's.
class SettlementTicket
{
public:
    SettlementTicket() = default;
    SettlementTicket(SettlementTicket &&other) noexcept : m_count(std::move(other.m_count)) {}
    SettlementTicket &operator=(SettlementTicket &&other) noexcept
    {
        if (this != &other) {
            release();
            m_count = std::move(other.m_count);
        }
        return *this;
    }
    ~SettlementTicket() { release(); }
    explicit operator bool() const { return bool(m_count); }

private:
    friend class DatabaseService;
    explicit SettlementTicket(std::shared_ptr<std::atomic<int>> count) : m_count(std::move(count))
    {
        m_count->fetch_add(1, std::memory_order_relaxed);
    }
    void release()
    {
        if (m_count) {
            m_count->fetch_sub(1, std::memory_order_relaxed);
            m_count.reset();
        }
    }
    std::shared_ptr<std::atomic<int>> m_count;
};
