#pragma once

#include <QMutex>
#include <QThreadPool>

#include <atomic>
#include <memory>

class AddressAssessor;
class AddressCompleter;
class AddressCorrector;
class DivisionMatcher;
class ExpressExtractor;
class LocalData;
class LocationExtractor;
class NameExtractor;
class SearchIndex;
class StructureParser;

// One address engine: the engines every endpoint answers with, the imported data they answer
// from (zip codes and POIs, one LocalData snapshot) and the search index over the divisions and
// that data. Whoever serves owns one (the address family: one per Services), so two servers in
// one process never share imported data; AddressApi::call takes the engine to answer from.
// A plain library object: no HTTP, no database.
//
// Thread-safe: any number of threads may call, and install data, at once. The engines are built
// on first use (about two seconds for all of them; warmUp() builds them ahead on the engine's
// own thread). A reader keeps the snapshot and the index it took for its whole call, so an
// install never pulls data from under a running request.
//
// Shared by every engine in the process, because they are immutable tables built from the
// compiled-in resources and a copy per engine would only cost memory (and build time):
// Gazetteer::builtin(), Pinyin::builtin(), DivisionMatcher::builtin() and SearchIndex::builtin()
// (the divisions alone, the index until POIs are installed).
class AddressEngine
{
public:
    AddressEngine();
    // Drops queued work and waits for a running warm-up or search index rebuild.
    ~AddressEngine();
    AddressEngine(const AddressEngine &) = delete;
    AddressEngine &operator=(const AddressEngine &) = delete;

    // The engines (see each header), built on first use; they live as long as the engine.
    const DivisionMatcher &divisionMatcher() const; // DivisionMatcher::builtin()
    const StructureParser &structureParser() const;
    const AddressCorrector &corrector() const;
    const AddressCompleter &completer() const;
    const AddressAssessor &assessor() const; // with the compiled-in area code table
    const NameExtractor &nameExtractor() const;
    const LocationExtractor &locationExtractor() const;
    const ExpressExtractor &expressExtractor() const;

    // The installed snapshot of imported data; never null (empty until data is installed).
    std::shared_ptr<const LocalData> localData() const;
    // Replaces the snapshot (null: empty) and rebuilds the search index over it on the
    // engine's thread (seconds for many POIs; searches answer from the previous index until
    // then).
    void install(std::shared_ptr<const LocalData> data);
    // Installs only if nothing was installed since generation() returned `generation`, so a
    // slow load started earlier cannot replace the data of a later import. False if skipped.
    bool installIf(quint64 generation, std::shared_ptr<const LocalData> data);
    // Increases with every install.
    quint64 generation() const;

    // The index search and input-search answer from: SearchIndex::builtin() while no POIs are
    // installed, else one over the divisions and the installed POIs.
    std::shared_ptr<const SearchIndex> searchIndex() const;
    // Blocks until the search index covers the installed data (a rebuild an install started
    // has finished); false if msecs (-1: no limit) passed first.
    bool waitForSearchIndex(int msecs = -1);

    // Builds every engine and the built-in search index on the engine's thread, so that the
    // first requests do not wait for them. Returns at once.
    void warmUp();

private:
    // An engine built on first use; after that, reading it is one atomic load.
    template <class T> class Lazy
    {
    public:
        template <class Make> const T &get(Make make) const
        {
            if (const T *built = m_built.load(std::memory_order_acquire))
                return *built;
            QMutexLocker lock(&m_mutex);
            if (!m_value) {
                m_value = make();
                m_built.store(m_value.get(), std::memory_order_release);
            }
            return *m_value;
        }

    private:
        mutable QMutex m_mutex;
        mutable std::unique_ptr<const T> m_value;
        mutable std::atomic<const T *> m_built{nullptr};
    };

    void scheduleIndexRebuild();
    void rebuildSearchIndex();

    Lazy<StructureParser> m_parser;
    Lazy<AddressCorrector> m_corrector;
    Lazy<AddressCompleter> m_completer;
    Lazy<AddressAssessor> m_assessor;
    Lazy<NameExtractor> m_names;
    Lazy<LocationExtractor> m_locations;
    Lazy<ExpressExtractor> m_express;

    mutable QMutex m_dataMutex; // guards the three below
    std::shared_ptr<const LocalData> m_data;
    std::shared_ptr<const SearchIndex> m_index;
    quint64 m_generation = 0;

    QMutex m_rebuildMutex;                   // one rebuild at a time
    quint64 m_indexedGeneration = 0;         // the generation m_index covers (under m_rebuildMutex)
    std::atomic_bool m_rebuildQueued{false}; // a rebuild is queued and has not read the data yet

    // Last: destroyed (after ~AddressEngine waited for it) before what its tasks use.
    QThreadPool m_pool;
};
