#include "AddressEngine.h"

#include "AddressAssessor.h"
#include "AddressCompleter.h"
#include "AddressCorrector.h"
#include "DivisionMatcher.h"
#include "ExpressExtractor.h"
#include "LocalData.h"
#include "LocationExtractor.h"
#include "NameExtractor.h"
#include "Pinyin.h"
#include "SearchIndex.h"
#include "StructureParser.h"

#include <QFile>

namespace {

// The built-in index is never freed: engines share it without owning it. Made once, so that a
// search takes a reference, not a new control block.
const std::shared_ptr<const SearchIndex> &builtinIndex()
{
    static const std::shared_ptr<const SearchIndex> index(&SearchIndex::builtin(),
                                                          [](const SearchIndex *) {});
    return index;
}

} // namespace

AddressEngine::AddressEngine() : m_data(LocalData::empty())
{
    // Two threads: a POI index rebuild need not wait for the warm-up.
    m_pool.setMaxThreadCount(2);
}

AddressEngine::~AddressEngine()
{
    m_pool.clear();
    m_pool.waitForDone();
}

const DivisionMatcher &AddressEngine::divisionMatcher() const
{
    return DivisionMatcher::builtin();
}

const StructureParser &AddressEngine::structureParser() const
{
    return m_parser.get([this] { return std::make_unique<StructureParser>(divisionMatcher()); });
}

const AddressCorrector &AddressEngine::corrector() const
{
    return m_corrector.get([this] {
        return std::make_unique<AddressCorrector>(divisionMatcher(), Pinyin::builtin());
    });
}

const AddressCompleter &AddressEngine::completer() const
{
    return m_completer.get(
        [this] { return std::make_unique<AddressCompleter>(structureParser()); });
}

const AddressAssessor &AddressEngine::assessor() const
{
    return m_assessor.get([this] {
        auto assessor = std::make_unique<AddressAssessor>(corrector(), completer());
        QFile file(QString::fromLatin1(AddressAssessor::kAreaCodesPath));
        QString error = QStringLiteral("cannot open %1").arg(file.fileName());
        if (!file.open(QIODevice::ReadOnly) || !assessor->loadAreaCodes(file.readAll(), &error))
            qFatal("Broken area code table: %s", qPrintable(error));
        return assessor;
    });
}

const NameExtractor &AddressEngine::nameExtractor() const
{
    return m_names.get([this] { return std::make_unique<NameExtractor>(divisionMatcher()); });
}

const LocationExtractor &AddressEngine::locationExtractor() const
{
    return m_locations.get(
        [this] { return std::make_unique<LocationExtractor>(divisionMatcher()); });
}

const ExpressExtractor &AddressEngine::expressExtractor() const
{
    return m_express.get([this] {
        return std::make_unique<ExpressExtractor>(nameExtractor(), locationExtractor());
    });
}

std::shared_ptr<const LocalData> AddressEngine::localData() const
{
    QMutexLocker lock(&m_dataMutex);
    return m_data;
}

void AddressEngine::install(std::shared_ptr<const LocalData> data)
{
    if (!data)
        data = LocalData::empty();
    {
        QMutexLocker lock(&m_dataMutex);
        m_data.swap(data);
        ++m_generation;
    }
    // The old snapshot (now in `data`) is released outside the lock.
    scheduleIndexRebuild();
}

bool AddressEngine::installIf(quint64 generation, std::shared_ptr<const LocalData> data)
{
    if (!data)
        data = LocalData::empty();
    {
        QMutexLocker lock(&m_dataMutex);
        if (m_generation != generation)
            return false;
        m_data.swap(data);
        ++m_generation;
    }
    scheduleIndexRebuild();
    return true;
}

quint64 AddressEngine::generation() const
{
    QMutexLocker lock(&m_dataMutex);
    return m_generation;
}

std::shared_ptr<const SearchIndex> AddressEngine::searchIndex() const
{
    {
        QMutexLocker lock(&m_dataMutex);
        if (m_index)
            return m_index;
    }
    return builtinIndex();
}

bool AddressEngine::waitForSearchIndex(int msecs)
{
    return m_pool.waitForDone(msecs);
}

void AddressEngine::warmUp()
{
    m_pool.start([this] {
        structureParser();
        assessor(); // the corrector, the completer and the area codes
        expressExtractor();
        SearchIndex::builtin(); // pinyin keys of every division and the prefix cache
    });
}

void AddressEngine::scheduleIndexRebuild()
{
    // Installs in quick succession share one rebuild: the queued one reads the newest data.
    if (m_rebuildQueued.exchange(true))
        return;
    m_pool.start([this] {
        m_rebuildQueued = false;
        rebuildSearchIndex();
    });
}

void AddressEngine::rebuildSearchIndex()
{
    QMutexLocker rebuild(&m_rebuildMutex);
    quint64 generation = 0;
    std::shared_ptr<const LocalData> data;
    {
        QMutexLocker lock(&m_dataMutex);
        generation = m_generation;
        data = m_data;
    }
    if (generation == m_indexedGeneration)
        return;
    QList<SearchIndex::Entry> pois;
    pois.reserve(data->poiCount());
    for (const LocalData::Poi &p : data->pois())
        pois.append(SearchIndex::Entry{p.name, p.aliases, QStringLiteral("poi"), QString(),
                                       p.divcode, SearchIndex::Point{p.lon, p.lat}});
    // Without POIs, searchIndex() answers from the divisions' index, built on first use.
    auto index = pois.isEmpty() ? nullptr
                                : std::make_shared<const SearchIndex>(
                                      Gazetteer::builtin(), Pinyin::builtin(), std::move(pois));
    {
        QMutexLocker lock(&m_dataMutex);
        m_index = std::move(index);
    }
    m_indexedGeneration = generation;
}
